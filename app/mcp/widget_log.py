"""The widget log: an app-only tool (``ui.visibility: ["app"]``) through which widgets report
errors and key events (mount, navigation, actions, unmount).

Each accepted event becomes one server log line, ``widget.event``, carrying the
correlation fields the MCP middleware binds for every call (``widget_session_id`` from
``_meta["openai/widgetSessionId"]``, the OpenAI session and subject, the account), so one
widget session can be followed from its first tool call to its unmount.

Anything a browser sends is untrusted: events are counted (``WidgetLogLimits``, in ``app.limits``),
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
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field

from app.auth.schemes import NOAUTH
from app.limits import Budget, Caller, Check, Limits, OverLimit, Rate, current_caller, parse_rate
from app.logging import REDACTED_KEYS
from app.mcp.registry import ToolRegistry
from app.mcp.results import request_meta, tool_result
from app.wording import Wording

say = Wording(__file__)
TOOL_NAME = "log_widget_event"
MAX_MESSAGE = 1000
MAX_DATA_BYTES = 4096
MAX_DEPTH = 6
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}
# A key containing one of these (any case) holds a secret: authToken, X-Api-Key, client_secret, ...
SECRET_PARTS = ("token", "secret", "passw", "authorization", "cookie", "apikey", "api_key", "api-key",
                "credential", "signature", "session_key", "private")
_URL_QUERY = re.compile(r"(\b[a-z][a-z0-9+.-]{0,31}://[^\s?#\"'<>]+)\?[^\s#\"'<>]*", re.IGNORECASE)
# Secrets in a VALUE, whatever its key: a bearer or basic credential, a JWT (three base64url parts, the first a
# JSON header), an e-mail address (personal data the log has no use for), the well-known key prefixes and this
# server's refresh tokens. Each alternative starts at a fixed word or is bounded, so the scan stays linear in
# the text (an anonymous widget must not buy seconds of CPU with a crafted string). Ids, digests and UUIDs stay.
_SECRET_VALUES = re.compile(
    r"\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"
    r"|(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b"
    r"|\b(?:sk|ghp|gho|xox[abp]|rt)[-_][A-Za-z0-9_-]{16,}", re.IGNORECASE)

log = structlog.get_logger("app.widget")


class LogReceipt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    outcome: Literal["logged", "rate_limited"] = Field(description="rate_limited: the event was dropped")


def secret_key(key: str) -> bool:
    lowered = key.lower()
    return lowered in REDACTED_KEYS or any(part in lowered for part in SECRET_PARTS)


def scrub_text(text: str) -> str:
    """Query strings cut from every URL in ``text`` (signed links carry their credentials there), and what looks
    like a credential, a token or an e-mail address replaced, whatever key it came under."""
    return _SECRET_VALUES.sub("[redacted]", _URL_QUERY.sub(r"\1?[redacted]", text))


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


@dataclass(frozen=True)
class WidgetLogLimits:
    """Two budgets an event must fit: its widget session (30 a minute: a mount, some clicks, a few errors),
    under its caller, and its caller (60 a minute), with the levels every per-caller budget has
    (``app.limits.caller``): an anonymous caller's address, and all anonymous callers together.

    The session id and ChatGPT's ``openai/subject`` are whatever the client sent, so rotating them
    only opens new narrow budgets; the address and global counts bound what anyone can write.
    """

    limits: Limits
    per_caller: Budget = field(default_factory=lambda: Budget("widget_log", parse_rate("60/minute")))
    per_session: Rate = field(default_factory=lambda: parse_rate("30/minute"))

    async def allow(self, caller: Caller, session: str) -> bool:
        # The session (any id the client likes) last: it only gets a key for an event its caller may log.
        checks = [*self.limits.checks(self.per_caller, caller),
                  Check("widget_log.session", self.per_session, f"{caller.key}|{session}", "this widget session")]
        try:
            await self.limits.acquire(checks)
        except OverLimit:
            return False
        return True


def register_widget_log(registry: ToolRegistry, limits: Limits) -> None:
    buckets = WidgetLogLimits(limits)

    @registry.tool(
        name=TOOL_NAME,
        title=say("Widget log"),
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
        caller = current_caller() or Caller.of(None, None)
        session = str(meta.get("openai/widgetSessionId") or "")[:128]
        if not await buckets.allow(caller, session):
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
