"""Per-caller budgets on tools (``registry.tool(..., budget="20/10 minutes")``, ``APP_TOOL_BUDGETS``).

An MCP middleware: for every ``tools/call`` it binds the caller (``app.limits.current_caller``)
for the layers below, which count in its name too (the anonymous storage quota, the widget
log), and charges the tool's budget before the tool runs. Over budget, the call is not run:
the answer is an ``isError`` result that says when to retry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, TextContent

from app.limits import Budget, Caller, Limits, OverLimit, bind_caller, retry_phrase, unbind_caller
from app.mcp.results import request_meta


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The token's subject if there is one; else the client address (already the trusted-proxy answer) with
    ChatGPT's anonymous ``openai/subject`` as a narrowing hint."""
    token = get_access_token()
    client = getattr(ctx.request, "client", None)
    host = getattr(client, "host", None)
    if token is not None:
        return Caller.of(token.subject or f"client:{token.client_id}", host)
    return Caller.of(None, host, request_meta(ctx.meta).get("openai/subject"))


def retry_text(seconds: int) -> str:
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).strftime("%H:%M:%S UTC")
    return f"{retry_phrase(seconds)} (at {at})"


def over_budget(tool: str, over: OverLimit) -> dict[str, Any]:
    text = (f"{tool} was not run: {over.label} used its budget ({over.rate}). Retry in {retry_text(over.retry_after)}; "
            "tell the user rather than retrying at once.")
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True).model_dump(
        mode="json", by_alias=True, exclude_none=True)


class ToolBudgets:
    def __init__(self, limits: Limits, budgets: Mapping[str, Budget]) -> None:
        self.limits = limits
        self.budgets = dict(budgets)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or ctx.request_id is None:
            return await call_next(ctx)
        caller = caller_of(ctx)
        bound = bind_caller(caller)
        try:
            name = (ctx.params or {}).get("name")
            budget = self.budgets.get(name) if isinstance(name, str) else None
            if budget is not None:
                try:
                    await self.limits.charge(budget, caller)
                except OverLimit as over:
                    return over_budget(name, over)
            return await call_next(ctx)
        finally:
            unbind_caller(bound)
