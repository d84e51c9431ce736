"""MCP-level middleware (``MCPServer(middleware=...)``): runs around every JSON-RPC request.

- ``WireShapes``: what the SDK's serialisation leaves out (a tool's ``securitySchemes`` on
  ``tools/list``) or cannot know (how long a ``resources/read`` result may be kept).
- ``OutputGuard``: a result whose structuredContent breaks the tool's published
  outputSchema is replaced by an error result, never shipped (an ``input_required`` result is a
  question, not the output: it passes); an error result in the SDK's words (arguments that fail
  the schema, a crash) is said again for the person and the model. It sets the language what the
  person reads is said in (``app.wording``), from the request's ``openai/locale``.
- ``ToolCallLog``: one log event per request with the correlation fields.
- ``StorableText``: a call whose arguments (or request ``_meta``) hold a character no database stores (NUL,
  an unpaired surrogate) is answered with an ``isError`` result before the tool runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import fastjsonschema
import structlog
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import InputRequiredResult
from mcp_types import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from app.mcp.errors import ToolFailure
from app.mcp.registry import failed
from app.mcp.results import WWW_AUTHENTICATE, request_meta, told_apart
from app.observability.metrics import Metrics
from app.text import unstorable
from app.wording import Wording, in_language, language_of, speaking

log = structlog.get_logger("app.mcp")
say = Wording(__file__)

# Request _meta keys worth correlating on (docs/chatgpt-contract.md §6). userLocation is deliberately absent.
CORRELATION_KEYS = {
    "openai/widgetSessionId": "widget_session_id",
    "openai/session": "openai_session",
    "openai/subject": "openai_subject",
    "openai/organization": "openai_organization",
    "openai/locale": "locale",
    "webplus/i18n": "locale",
}


def asks_for_input(result: Any) -> bool:
    """An ``input_required`` result (SEP-2322): the handler asks the client or the user something
    first;
    the client calls again with the answers. A typed result or its mapping."""
    if isinstance(result, InputRequiredResult):
        return True
    return isinstance(result, dict) and result.get("resultType") == "input_required"


# How long a client may keep a result (SEP-2549, 2026-07-28; docs/chatgpt-contract.md §2, "Cache
# hints").
WIDGET_TTL_MS = 30 * 24 * 3600 * 1000  # a content-hashed widget never changes under its URI
LIST_TTL_MS = 60 * 1000  # what the server offers changes with a deploy: seen within a minute of it


def list_hints() -> dict[str, CacheHint]:
    """The lists are the same for every caller (a tool the caller may not use is listed with its
    schemes, and refused when called): shared, for a minute."""
    public = CacheHint(ttl_ms=LIST_TTL_MS, scope="public")
    return {
        method: public
        for method in (
            "tools/list",
            "resources/list",
            "resources/templates/list",
            "prompts/list",
            "server/discover",
        )
    }


class WireShapes:
    """What the SDK's serialisation leaves out or cannot know, put on a result once it is shaped:

    - ``tools/list``: each tool's ``securitySchemes``, copied back from its ``_meta`` mirror (mcp 2.3
      re-validates results per protocol version and drops the unknown top-level field);
    - ``resources/read`` (2026-07-28): how long the result may be kept. A content-hashed widget is
      immutable and the same for everyone; anything else a resource holds may be one person's and
      is never kept (0 ms, private). The lists' hints are the server's (``list_hints``).

    One layer for both: each layer of the chain costs every request."""

    def __init__(self, immutable: set[str]) -> None:
        self.immutable = immutable

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        method = ctx.method
        if method == "tools/list" and isinstance(result, dict):
            for tool in result.get("tools", []):
                schemes = (tool.get("_meta") or {}).get("securitySchemes")
                if schemes is not None:
                    tool["securitySchemes"] = schemes
            return result
        if (method != "resources/read" or not isinstance(result, dict)
                or ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS or asks_for_input(result)):
            return result  # another method, a protocol without the hints, or a question
        if str((ctx.params or {}).get("uri")) in self.immutable:
            return {**result, "ttlMs": WIDGET_TTL_MS, "cacheScope": "public"}
        return {**result, "ttlMs": 0, "cacheScope": "private"}


# How the SDK begins the text of every failure it turns into an isError result (ToolError), and
# what pydantic's own text of a validation error holds.
SDK_FAILURE = "Error executing tool "
PYDANTIC = re.compile(r"validation errors? for |errors\.pydantic\.dev|\[type=")
MAX_SAID = 2_000  # characters of an SDK error text read
MAX_EXPLAINED = 20_000  # an SDK refusal longer than this is answered without re-validating


class OutputGuard:
    def __init__(self, explain: Callable[[str, Any], ToolFailure | None],
                 title_of: Callable[[str], str | None]) -> None:
        self._server: MCPServer | None = None
        self._validators: dict[str, Callable[[Any], Any]] | None = None
        self._explain = explain  # ToolRegistry.explain: arguments the SDK refused, in words
        self._title_of = title_of

    def bind(self, server: MCPServer) -> None:
        self._server = server

    async def _validator(self, name: str) -> Callable[[Any], Any] | None:
        if self._validators is None:
            assert self._server is not None, "OutputGuard.bind() was not called"
            # Compiled validators: ~30x faster than interpreting the schema on every call. They
            # check and never write: by default fastjsonschema fills a schema's defaults into the
            # data it checks (a `"title": null` the tool left out, on the wire).
            self._validators = {
                t.name: fastjsonschema.compile(t.output_schema, use_default=False)
                for t in await self._server.list_tools()
                if t.output_schema
            }
        return self._validators.get(name)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        # What the person reads of a failure, said in the language the host asked for: set once
        # here, the outermost layer that says anything, for the layers and the tool within.
        with speaking(language_of(request_meta(ctx.meta))):
            return await self._guarded(ctx, call_next)

    async def _guarded(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext,
                       ) -> HandlerResult:
        result = await call_next(ctx)
        if asks_for_input(result):  # a question, not the tool's output
            return result
        if not isinstance(result, dict):
            return result
        if result.get("isError"):
            return self._reworded(ctx, result)
        name = (ctx.params or {}).get("name", "")
        validator = await self._validator(name)
        if validator is None:
            return result
        structured = result.get("structuredContent")
        if structured is None:
            detail = "structuredContent is missing"
        else:
            try:
                validator(structured)
                return result
            except fastjsonschema.JsonSchemaException as exc:
                # The message names the path and the rule, never the offending value.
                detail = str(getattr(exc, "message", exc))[:200]
        log.error("tool.output_schema_violation", tool=name, detail=detail)
        # Keep the protocol envelope (resultType, serverInfo stamp); drop the payload and widget data.
        withheld = {k: v for k, v in result.items() if k not in ("structuredContent", "content", "_meta")}
        envelope_meta = {k: v for k, v in (result.get("_meta") or {}).items()
                         if k.startswith("io.modelcontextprotocol/")}
        if envelope_meta:
            withheld["_meta"] = envelope_meta
        withheld["content"] = [block.model_dump(mode="json", by_alias=True, exclude_none=True)
                               for block in told_apart(in_language(say(
            "The answer could not be shown: the server made a mistake, and it is logged for the "
            "operator.")),
            f"Tool {name} produced a result that does not match its declared output schema; the "
            "result was withheld. Tell the user the answer could not be shown; calling the tool "
            "again will fail the same way until the server is fixed.")]
        withheld["isError"] = True
        return withheld


    def _reworded(self, ctx: ServerRequestContext[Any, Any], result: dict[str, Any],
                  ) -> dict[str, Any]:
        """An error result the SDK wrote (its text begins "Error executing tool"), said for its
        readers: arguments that fail the schema, in plain words (``app.mcp.arguments``); a crash,
        as a failure the server logged. Every other error result is the tools' own."""
        content = result.get("content") or [{}]
        text = content[0].get("text") if isinstance(content[0], dict) else None
        if not isinstance(text, str):
            return result
        params = ctx.params or {}
        name = str(params.get("name", ""))
        if text == f"Unknown tool: {name}":  # the SDK's words for a name it does not have
            unknown = ToolFailure(say("There is no tool named “{name}” here.", name=name[:80]),
                                  "Call tools/list to see the tools this server has, and use one "
                                  "of those.")
            reworded = failed(name, unknown).model_dump(mode="json", by_alias=True,
                                                        exclude_none=True)
            return {**result, "content": reworded["content"]}
        if not text.startswith(SDK_FAILURE):
            return result
        title = self._title_of(name) or name
        # Only the head is read: pydantic's text for a hostile argument list runs to megabytes.
        said = text[:MAX_SAID].removeprefix(f"{SDK_FAILURE}{name}").removeprefix(": ")
        if not said or said.startswith(SDK_FAILURE):  # a crash: its own text stays in the log
            failure = ToolFailure(say("{title} failed on the server before it finished; the "
                                      "failure is logged for the operator.", title=title),
                                  "Tell the user it did not work. Trying again with the same "
                                  "arguments is unlikely to help.")
        elif len(text) <= MAX_EXPLAINED and (
                explained := self._explain(name, params.get("arguments"))) is not None:
            # Arguments that fail the schema, in plain words: validated again, so only for a
            # refusal of a size real arguments have (hundreds of thousands of wrong keys would
            # cost seconds of the loop for a list of which the first five are said anyway).
            failure = explained
        elif PYDANTIC.search(said):  # refused by the SDK, not by the same model here
            failure = ToolFailure(say("{title} could not use the arguments it was given.",
                                      title=title),
                                  f"Call {name} again with arguments that match its input schema: "
                                  "each argument's description says what it holds.")
        else:  # a ToolError a tool raised itself: its words, without the SDK's
            failure = ToolFailure(said)
        reworded = failed(name, failure).model_dump(mode="json", by_alias=True, exclude_none=True)
        return {**result, "content": reworded["content"]}


class ToolCallLog:
    """One structured event per JSON-RPC request, with every correlated field, and its duration in
    ``mcp.server.operation.duration`` (``metrics``).

    The request id comes from the access log's bound context; the account from the
    SDK's auth context; the rest from the request ``_meta`` ChatGPT sends. The error type is
    the one the SDK's span records: the JSON-RPC error code, ``tool_error`` for a result with
    ``isError``, or the exception's class.
    """

    def __init__(self, metrics: Metrics | None = None) -> None:
        self.metrics = metrics

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # notifications: nothing to time or correlate
            return await call_next(ctx)
        meta = request_meta(ctx.meta)
        version = ctx.protocol_version
        if ctx.method == "initialize":  # not negotiated yet: report what the client asked for
            version = str((ctx.params or {}).get("protocolVersion", version))[:32]
        fields: dict[str, Any] = {"rpc_method": ctx.method, "protocol_version": version}
        for key, name in CORRELATION_KEYS.items():
            value = meta.get(key)
            if isinstance(value, str) and value and name not in fields:
                fields[name] = value[:128]
        token = get_access_token()
        if token is not None:
            fields["client_id"] = token.client_id[:128]
            if token.subject:
                fields["subject"] = token.subject[:128]
        tool = (ctx.params or {}).get("name") if ctx.method == "tools/call" else None
        if isinstance(tool, str):
            fields["tool"] = tool[:128]
        structlog.contextvars.bind_contextvars(**fields)
        started = time.perf_counter()
        outcome, error, error_type = "error", None, None
        try:
            result = await call_next(ctx)
            outcome = _outcome(result)
            if outcome not in ("ok", "input_required"):
                error_type = "tool_error"
            return result
        except BaseException as exc:  # a cancelled call (the client left) too: never counted a success
            error = type(exc).__name__
            error_type = _error_type(exc)
            raise
        finally:
            elapsed = time.perf_counter() - started
            if self.metrics is not None:
                self.metrics.mcp_operation(ctx.method, tool if isinstance(tool, str) else None, error_type, elapsed)
            extra = {"error": error} if error else {}
            log.info("mcp.tool_call" if tool is not None else "mcp.request",
                     duration_ms=round(elapsed * 1000, 2), outcome=outcome, **extra)
            structlog.contextvars.unbind_contextvars(*fields)


def _outcome(result: Any) -> str:
    if isinstance(result, dict) and result.get("resultType") == "input_required":
        return "input_required"
    if not (isinstance(result, dict) and result.get("isError")):
        return "ok"
    return "auth_required" if WWW_AUTHENTICATE in (result.get("_meta") or {}) else "tool_error"


def _error_type(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return str(exc.error.code)
    if isinstance(exc, ValidationError):  # what the SDK answers it with
        return str(INVALID_PARAMS)
    return type(exc).__qualname__


class StorableText:
    """Refuses a ``tools/call`` whose arguments (or request ``_meta``) no tool could store or pass on, before the
    tool (a fetch, a write) and its budget: the person reads which argument held what; the model, to send it again
    without it."""

    def __init__(self, tools: set[str]) -> None:
        self.tools = tools

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        name = params.get("name")
        if not (isinstance(name, str) and name in self.tools):
            return await call_next(ctx)  # not a tool of ours (or not a name): the SDK's own answer
        found = unstorable(params.get("arguments"))
        answers = params.get("inputResponses")
        if found is None and answers is not None:  # the user's answers to a tool's question: text too
            found = unstorable(answers, "inputResponses", "inputResponses")
        if found is not None:
            where, what = found
            advice = (f"Call {name} again with {where} written without that character: it is never part of real "
                      "text. Do not retry with the same value.")
        elif (found := unstorable(params.get("_meta"), "_meta")) is not None:
            # The request _meta the tools and the budgets read (openai/userLocation's city, openai/subject as a
            # limit key): the host wrote it, not the model.
            where, what = found
            advice = ("The request's metadata, which the host sends, not the arguments, is malformed: tell the user "
                      "this request could not be processed; retrying it unchanged will fail the same way.")
        else:
            return await call_next(ctx)
        log.info("tool.unstorable_text", argument=where)  # where, never the text
        failure = ToolFailure(say("The text in {where} contains {what}, which cannot be saved or "
                                  "sent on.", where=where, what=what), advice)
        return failed(name, failure).model_dump(mode="json", by_alias=True, exclude_none=True)
