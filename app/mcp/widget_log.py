"""The widget log: an app-only tool (``ui.visibility: ["app"]``) through which widgets report
errors and key events (mount, navigation, actions, unmount).

Each accepted event becomes one server log line, ``widget.event``, carrying the
correlation fields the MCP middleware binds for every call (``widget_session_id`` from
``_meta["openai/widgetSessionId"]``, the OpenAI session and subject, the account), so one
widget session can be followed from its first tool call to its unmount.

Anything a browser sends is untrusted: events are rate-limited (``WidgetLogLimits``),
messages are cut to ``MAX_MESSAGE`` characters, ``data`` over ``MAX_DATA_BYTES`` of JSON is
dropped, keys that look secret (``SECRET_PARTS``, any case) are redacted at any depth, and URL
query strings (where signed links keep their credentials) are cut from every string. A limited
event is answered ``{"outcome": "rate_limited"}``, not an error, so a widget in an error loop
cannot turn its own logging into more errors.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import structlog
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from app.auth.clients import RateLimiter
from app.auth.schemes import NOAUTH
from app.logging import REDACTED_KEYS
from app.mcp.registry import ToolRegistry
from app.mcp.results import request_meta, tool_result

TOOL_NAME = "log_widget_event"
MAX_MESSAGE = 1000
MAX_DATA_BYTES = 4096
MAX_DEPTH = 6
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
# A key containing one of these (any case) holds a secret: authToken, X-Api-Key, client_secret, ...
SECRET_PARTS = ("token", "secret", "passw", "authorization", "cookie", "apikey", "api_key", "api-key",
                "credential", "signature", "session_key", "private")
_URL_QUERY = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s?#\"'<>]+)\?[^\s#\"'<>]*", re.IGNORECASE)

log = structlog.get_logger("app.widget")


class LogReceipt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Literal["logged", "rate_limited"] = Field(description="rate_limited: the event was dropped")


def secret_key(key: str) -> bool:
    lowered = key.lower()
    return lowered in REDACTED_KEYS or any(part in lowered for part in SECRET_PARTS)


def scrub_text(text: str) -> str:
    """Query strings cut from every URL in ``text``: signed links carry their credentials there."""
    return _URL_QUERY.sub(r"\1?[redacted]", text)


def scrub(value: Any, depth: int = 0) -> Any:
    """``value`` with secret-looking keys redacted and URL query strings cut, at any depth."""
    if depth >= MAX_DEPTH:
        return "[too deep]"
    if isinstance(value, dict):
        return {str(k)[:64]: "[redacted]" if secret_key(str(k)) else scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, depth + 1) for v in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


@dataclass
class WidgetLogLimits:
    """Three budgets an event must fit, per minute: its widget session (30: a mount, some clicks, a
    few errors), its caller (120), and this process (600).

    The session id is whatever the caller sent, so rotating it only escapes the first budget; the
    caller is the token's subject, else ChatGPT's anonymous ``openai/subject``, else the client
    address. All three can be forged by an anonymous client, which is why the process-wide budget
    bounds what any of them can write: at most 600 events a minute, each a few KB.
    """

    per_session: RateLimiter = field(default_factory=lambda: RateLimiter(30, 60.0))
    per_caller: RateLimiter = field(default_factory=lambda: RateLimiter(120, 60.0))
    total: RateLimiter = field(default_factory=lambda: RateLimiter(600, 60.0))

    def allow(self, session: str, caller: str) -> bool:
        if self.per_session.blocked(session) or self.per_caller.blocked(caller) or self.total.blocked("*"):
            return False
        self.per_session.hit(session)
        self.per_caller.hit(caller)
        self.total.hit("*")
        return True


def caller_of(ctx: Context, meta: dict[str, Any]) -> str:
    token = get_access_token()
    if token is not None and token.subject:
        return f"sub:{token.subject}"
    if isinstance(meta.get("openai/subject"), str) and meta["openai/subject"]:
        return f"openai:{meta['openai/subject']}"
    client = getattr(getattr(ctx.request_context, "request", None), "client", None)
    return f"ip:{getattr(client, 'host', None) or 'unknown'}"


def register_widget_log(registry: ToolRegistry, limits: WidgetLogLimits | None = None) -> None:
    buckets = limits or WidgetLogLimits()

    @registry.tool(
        name=TOOL_NAME,
        title="Widget log",
        description="Record an error or a key event of one of this app's widgets in the server log. "
        "Called by the widgets themselves, never by the model.",
        # Writes nothing the user or the model can see: read-only for the host, so no confirmation.
        read_only=True,
        destructive=False,
        open_world=False,
        security=[NOAUTH],
        visibility=["app"],
    )
    async def log_widget_event(
        ctx: Context,
        event: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.-]{0,63}$",
                                    description="Event name, dotted lower case (widget.error, zoo.open)")],
        level: Annotated[Literal["debug", "info", "warning", "error"], Field(description="Severity")] = "info",
        widget: Annotated[str | None, Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$",
                                            description="The widget's name")] = None,
        message: Annotated[str | None, Field(max_length=20_000, description="Human-readable detail")] = None,
        data: Annotated[dict[str, Any] | None, Field(description="Small JSON object of event fields")] = None,
    ) -> Annotated[CallToolResult, LogReceipt]:
        meta = request_meta(ctx.request_context.meta)
        caller = caller_of(ctx, meta)[:160]
        session = str(meta.get("openai/widgetSessionId") or caller)[:128]
        if not buckets.allow(session, caller):
            return tool_result(LogReceipt(outcome="rate_limited"), "Rate limited: event not logged.")
        fields: dict[str, Any] = {"widget_event": event, "widget": widget}
        if message is not None:
            fields["message"] = scrub_text(message[:MAX_MESSAGE])
            if len(message) > MAX_MESSAGE:
                fields["message_truncated"] = len(message)
        if data is not None:
            encoded = json.dumps(data, default=str, separators=(",", ":"))
            if len(encoded.encode()) > MAX_DATA_BYTES:
                fields["data_dropped_bytes"] = len(encoded.encode())
            else:
                fields["data"] = scrub(data)
        log.log(LEVELS[level], "widget.event", **fields)
        return tool_result(LogReceipt(outcome="logged"), "Logged.")
