"""Per-caller budgets on tools (``registry.tool(..., budget="20/10 minutes")``, ``APP_TOOL_BUDGETS``).

An MCP middleware: for every ``tools/call`` it binds the caller (``app.limits.current_caller``)
for the layers below, which count in its name too (the anonymous storage quota, the widget
log), and charges the tool's budget before the tool runs. Over budget, the call is not run:
the answer is an ``isError`` result that says when to retry.

A budget is charged one unit a call, or what its ``cost`` says the call's arguments are worth
(``compare_files``: one a file). Tools that name the same budget share one count: what is
expensive is a file fetched, whichever tool fetches it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult, ContentBlock, TextContent

from app.limits import Budget, Caller, Limits, OverLimit, bind_caller, retry_phrase, unbind_caller
from app.mcp.results import FOR_MODEL, FOR_PERSON, request_meta
from app.wording import Wording, in_language

say = Wording(__file__)
MAX_COST = 1000  # what one call may be charged, whatever its arguments say


@dataclass(frozen=True)
class ToolBudget:
    """A tool's per-caller budget: ``rate`` of units, one a call or ``cost(arguments)``, counted under ``name``
    (default the tool's own name; tools naming the same budget share its count and must give it one rate).

    ``cost`` sees the arguments as sent, before they are validated: it must expect anything."""

    rate: str
    name: str | None = None
    cost: Callable[[Mapping[str, Any]], int] | None = None


@dataclass(frozen=True)
class Charge:
    """What a call of one tool is charged: its budget, and how many units its arguments cost."""

    budget: Budget
    cost: Callable[[Mapping[str, Any]], int] | None = None

    def units(self, arguments: object) -> int:
        if self.cost is None:
            return 1
        try:
            units = int(self.cost(arguments if isinstance(arguments, Mapping) else {}))
        except Exception:  # malformed arguments: the SDK refuses the call after this, with its own error
            return 1
        return max(1, min(units, MAX_COST))


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


def over_budget(tool: str, budget: str, over: OverLimit, *, anonymous: bool = False) -> dict[str, Any]:
    """The refusal of a call over its budget: what happened for the person, what to do for the
    model (``told_apart``)."""
    which = "its budget" if budget == tool else f"its {budget} budget"
    if over.cost > over.amount:
        said = say("This was not done: it asks for more at once than is allowed.")
        text = (f"{tool} was not run: this call needs {over.cost} units and {over.label} may use at most "
                f"{over.rate} of {which}. Ask for less at once (fewer files).")
    else:
        said = say("This was not done: too many requests for now. Try again in {wait}.",
                   wait=retry_phrase(over.retry_after))
        needs = f" (this call needs {over.cost})" if over.cost > 1 else ""
        text = (f"{tool} was not run: {over.label} used {which} ({over.rate}){needs}. Retry in "
                f"{retry_text(over.retry_after)}; tell the user rather than retrying at once.")
        if anonymous:  # anonymous budgets are shared; an account's is its own
            text += " Connecting (signing in to) this app gives the user a budget of their own."
    content: list[ContentBlock] = [TextContent(type="text", text=in_language(said),
                                               annotations=FOR_PERSON),
                                   TextContent(type="text", text=text, annotations=FOR_MODEL)]
    return CallToolResult(content=content, is_error=True).model_dump(
        mode="json", by_alias=True, exclude_none=True)


class ToolBudgets:
    def __init__(self, limits: Limits, charges: Mapping[str, Charge]) -> None:
        self.limits = limits
        self.charges = dict(charges)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or ctx.request_id is None:
            return await call_next(ctx)
        caller = caller_of(ctx)
        bound = bind_caller(caller)
        try:
            params = ctx.params or {}
            name = params.get("name")
            if isinstance(name, str) and (charge := self.charges.get(name)) is not None:
                try:
                    await self.limits.charge(charge.budget, caller, charge.units(params.get("arguments")))
                except OverLimit as over:
                    return over_budget(name, charge.budget.name.removeprefix("tool."), over,
                                       anonymous=caller.account is None)
            return await call_next(ctx)
        finally:
            unbind_caller(bound)
