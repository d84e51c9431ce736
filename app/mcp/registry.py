"""The one place tools and widgets are declared; every ChatGPT key is derived from that declaration.

What the keys mean: docs/chatgpt-contract.md §3 (descriptors) and §5 (auth).

A feature's ``register`` calls ``registry.tool(...)``. The registry publishes what
it was told (annotations, ``securitySchemes``, widget template, status lines, file
params) and wraps each tool so that the same ``security`` list is ENFORCED before
the tool body runs: a refused call gets an ``isError`` result carrying the
``mcp/www_authenticate`` challenge that makes ChatGPT offer account linking.
The same wrapper is the one place a foreseen failure becomes an ``isError`` result: a
feature raises its own ``app.mcp.errors.ToolFailure``, never the SDK's ``ToolError``.
``build()`` then assembles the SDK's ``MCPServer``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
import structlog
from mcp.server.apps import Apps, Visibility
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.caching import CacheHint
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, RequestStateSecurity
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources import TextResource
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from mcp_types import INVALID_REQUEST
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from openai_mcp_extensions import (
    OpenAIExtensions,
    OpenAIFileEntrypoint,
    OpenAIUiEntrypoint,
    OpenAIUiToolMetadata,
)
from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app import __version__
from app.auth import schemes
from app.db import DatabaseNotMigrated, DatabaseUnavailable
from app.limits import Rate, parse_rate
from app.mcp.admission import current as current_admission
from app.mcp.arguments import Arguments
from app.mcp.budgets import ToolBudget
from app.mcp.check import MAX_STATUS
from app.mcp.errors import ToolFailure
from app.mcp.forms import Asking
from app.mcp.results import WWW_AUTHENTICATE, told_apart
from app.mcp.settings import (
    READ_TOOL,
    SETTINGS_CAPABILITY,
    UPDATE_TOOL,
    SettingsError,
    SettingsGroup,
    SettingsStore,
    compose,
    read_in_words,
    update_in_words,
)
from app.mcp.widgets import Widget, WidgetBundleMissing
from app.storage import StorageError
from app.wording import Wording, in_language

F = TypeVar("F", bound=Callable[..., Any])
MENTIONS_CAPABILITY = "openai/mentions"
MENTIONS_TOOL = "search_mentions"
MAX_MENTIONS = 20
OUTAGE_ADVICE = ("Try the same call again in a few seconds; if it fails again, tell the user the "
                 "service is unavailable right now.")
NOT_MIGRATED_ADVICE = ("Tell the user the service is being updated by its operator; calling again "
                       "will not help until then.")
log = structlog.get_logger("app.mcp")
say = Wording(__file__)


class RegistryError(ValueError):
    """A tool declaration that cannot be served (refused at start-up, and by ``check``)."""


@dataclass(frozen=True)
class DeclaredBudget:
    name: str
    rate: Rate
    cost: Callable[[Mapping[str, Any]], int] | None


@dataclass
class _ToolSpec:
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    meta: dict[str, Any]
    widget: Widget | None
    visibility: list[Visibility] | None
    origin: str
    budget: DeclaredBudget | None = None
    arguments: Arguments | None = None  # made on the first call whose arguments fail (explain)


@dataclass
class _AccountResource:
    template: str
    fn: Callable[..., Any]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class MentionSource:
    """What a feature offers the composer's @-mention search: ``find(query, subject)`` gives up to
    ``MAX_MENTIONS`` links (the account's own items by their resource URI, or public pages); asked
    only of a caller whose token carries ``scope`` (None: anyone, the subject then None)."""

    name: str
    find: Callable[[str, str | None], Awaitable[list[MentionLink]]]
    scope: str | None = None


class MentionLink(BaseModel):
    """One item the composer offers (a ``resource_link``)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None  # noqa: N815 (the wire's name)


class MentionResults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[MentionLink] = Field(description="What the person may @-mention, best first")


def advertise(capabilities: Mapping[str, dict[str, Any]]) -> ServerMiddleware[Any]:
    """MCP middleware putting OpenAI's extension ``capabilities`` (``openai/mentions``,
    ``openai/settings``: openai/mcp-extensions docs/spec.md) in the capabilities of both eras:
    ``extensions`` of ``server/discover``, and ``experimental`` of a 2025 ``initialize``, whose
    schema has no ``extensions`` (the spec reads either). Said here, not by the library's SDK
    ``Extension`` classes: those also add their tools without schemes, and the core subclasses
    nothing of the SDK's. The tools themselves are declared through the registry, where their
    schemes are enforced."""

    async def capabilities_said(ctx: ServerRequestContext[Any, Any], call_next: CallNext,
                                ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method not in ("initialize", "server/discover") or not isinstance(result, dict):
            return result
        found = result.get("capabilities")
        if isinstance(found, dict):
            where = "experimental" if ctx.method == "initialize" else "extensions"
            said = found.get(where)
            found[where] = {**(said if isinstance(said, dict) else {}), **capabilities}
        return result

    return capabilities_said


@dataclass
class ToolRegistry:
    widget_domain: str
    resource_metadata_url: str
    # serverInfo's name and title: the brand, APP_SERVER_NAME / APP_SERVER_TITLE (the composition root passes them).
    name: str
    title: str
    _tools: dict[str, _ToolSpec] = field(default_factory=dict)
    _widgets: dict[str, Widget] = field(default_factory=dict)
    _resources: list[_AccountResource] = field(default_factory=list)
    _mentions: list[MentionSource] = field(default_factory=list)
    _settings: list[SettingsGroup] = field(default_factory=list)
    # Where each account's settings are kept; given by the composition root (app.preferences).
    settings_store: SettingsStore | None = None
    _capabilities: dict[str, dict[str, Any]] = field(default_factory=dict)

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        read_only: bool,
        destructive: bool,
        open_world: bool,
        idempotent: bool | None = None,
        security: Sequence[schemes.Scheme],
        widget: Widget | None = None,
        visibility: list[Visibility] | None = None,
        invoking: str | None = None,
        invoked: str | None = None,
        file_params: list[str] | None = None,
        meta: dict[str, Any] | None = None,
        budget: str | ToolBudget | None = None,
        entrypoints: Sequence[OpenAIUiEntrypoint] = (),
    ) -> Callable[[F], F]:
        for label, text in (("invoking", invoking), ("invoked", invoked)):
            if text is not None and len(text) > MAX_STATUS:
                raise RegistryError(f"{name}: {label} status is {len(text)} chars, ChatGPT allows {MAX_STATUS}")
        try:
            declared = schemes.validate(security)
        except ValueError as exc:
            raise RegistryError(f"{name}: {exc}") from None
        if isinstance(budget, str):
            budget = ToolBudget(budget)
        try:
            rate = parse_rate(budget.rate) if budget is not None else None
        except ValueError as exc:
            raise RegistryError(f"{name}: budget {exc}") from None
        declared_budget = DeclaredBudget(budget.name or name, rate, budget.cost) if budget and rate else None
        if visibility is not None and (not visibility or not set(visibility) <= {"model", "app"}):
            raise RegistryError(f"{name}: visibility must be a non-empty subset of ['model', 'app']")
        tool_meta: dict[str, Any] = {**(meta or {}), "securitySchemes": declared}
        if widget is not None or visibility is not None:
            tool_meta["openai/widgetAccessible"] = visibility is None or "app" in visibility
            if visibility == ["app"]:
                tool_meta["openai/visibility"] = "private"
        if widget is None and visibility is not None:
            # A tool only widgets call (e.g. the widget log), bound to no template of its own.
            tool_meta["ui"] = {"visibility": list(visibility)}
        if widget is not None:
            try:
                uri = widget.uri_for(self.widget_domain)
                tool_meta["openai/outputTemplate"] = uri
            except WidgetBundleMissing as exc:
                raise RegistryError(f"{name}: {exc}") from None
            known = self._widgets.get(widget.name, widget).uri_for(self.widget_domain)
            if known != uri:
                raise RegistryError(f"{name}: another widget is already named {widget.name!r} "
                                    f"({known} vs {uri}); widget names must be unique")
        if invoking:
            tool_meta["openai/toolInvocation/invoking"] = invoking
        if invoked:
            tool_meta["openai/toolInvocation/invoked"] = invoked
        if file_params:
            tool_meta["openai/fileParams"] = list(file_params)
        if entrypoints:
            # Typed with OpenAI's own models: the sidebar, a conversation's side panel, a file.
            tool_meta["openai/ui"] = OpenAIUiToolMetadata(entrypoints=list(entrypoints)).model_dump(
                mode="json", by_alias=True, exclude_none=True)
        annotations = ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            open_world_hint=open_world,
            idempotent_hint=idempotent,
        )

        def decorator(fn: F) -> F:
            origin = f"{fn.__module__}.{fn.__qualname__}"
            if problem := _entrypoint_problem(fn, entrypoints):
                raise RegistryError(f"{name}: {problem}")
            if name in self._tools:
                raise RegistryError(f"tool {name!r} is declared twice: by {self._tools[name].origin} and by {origin}")
            kwargs = {"name": name, "title": title, "description": description, "annotations": annotations}
            wrapped = _enforced(fn, name, title, declared, self.resource_metadata_url)
            self._tools[name] = _ToolSpec(wrapped, kwargs, tool_meta, widget, visibility, origin,
                                          declared_budget)
            if widget is not None:  # registered with its first tool, so a refused tool leaves no widget behind
                self._widgets.setdefault(widget.name, widget)
            return fn

        return decorator

    def account_resource(self, template: str, *, name: str, title: str, description: str,
                         scopes: Sequence[str], mime_type: str = "application/json",
                         ) -> Callable[[F], F]:
        """An item of the caller's account as a resource (``app://recipes/{recipe_id}``): read with
        a token carrying ``scopes``, of the account the item belongs to. An anonymous read, or one
        without the scopes, is refused with the linking challenge in the error's data (the
        challenge a tool's refusal carries). The function returns the item's text, or None when the
        account has no such item (another account's is none): that read is answered exactly as the
        SDK answers a URI it does not know. The pickers of ``app.mcp.forms`` offer these URIs."""
        needed = list(scopes)

        def decorator(fn: F) -> F:
            @functools.wraps(fn)
            async def guarded(*args: Any, **kwargs: Any) -> Any:
                token = get_access_token()
                unmet = [s for s in needed if token is None or s not in token.scopes]
                if token is None or not token.subject or unmet:
                    signed_in = token is not None
                    refused = schemes.refusal_description(title, unmet or needed,
                                                          signed_in=signed_in)
                    challenge = schemes.challenge(self.resource_metadata_url, unmet or needed,
                                                  refused)
                    words = ("needs more access to the linked account: ask the user to reconnect "
                             "the app and approve it" if signed_in else "needs the user's account: "
                             "ask the user to connect (sign in to) this app")
                    raise MCPError(code=INVALID_REQUEST, message=f"{title} {words}.",
                                   data={WWW_AUTHENTICATE: [challenge]})
                result = fn(*args, **kwargs)
                found = await result if inspect.isawaitable(result) else result
                if found is None:
                    raise ResourceNotFoundError(f"Unknown resource: {template.format(**kwargs)}")
                return found

            self._resources.append(_AccountResource(template, guarded, {
                "name": name, "title": title, "description": description,
                "mime_type": mime_type}))
            return fn

        return decorator

    def mention_source(self, source: MentionSource) -> None:
        """A feature's items for the composer's @-mention search (``search_mentions``)."""
        self._mentions.append(source)

    def settings_group(self, group: SettingsGroup) -> None:
        """A feature's section of the account's settings (``read_settings``/``update_settings``)."""
        self._settings.append(group)

    def complete(self) -> None:
        """Declare the tools the features' contributions make (``search_mentions`` from the
        mention sources, the settings tools from the settings groups), once every feature has
        registered: before anything reads the tools."""
        if self._mentions and MENTIONS_TOOL not in self._tools:
            self._declare_mentions()
        if self._settings and READ_TOOL not in self._tools:
            if self.settings_store is None:
                raise RegistryError("settings groups were declared, and no settings_store keeps "
                                    "their values (the composition root gives app.preferences')")
            self._declare_settings(self.settings_store)
        if problem := self._quick_actions_problem():
            raise RegistryError(problem)

    def _needs(self, name: str) -> list[str]:
        """The arguments declared tool ``name`` cannot be called without."""
        return _needs_arguments(inspect.unwrap(self._tools[name].fn))

    def _quick_actions_problem(self) -> str | None:
        for name, spec in self._tools.items():
            for entry in (spec.meta.get("openai/ui") or {}).get("entrypoints", []):
                target = (entry.get("quickAction") or {}).get("target") or {}
                called = target.get("name")
                if called is None:
                    continue
                if called not in self._tools:
                    return f"{name}: its quick action calls {called!r}, which is no tool here"
                given = set(target.get("arguments") or {})
                if missing := [n for n in self._needs(called) if n not in given]:
                    return (f"{name}: its quick action calls {called!r} without "
                            f"{', '.join(missing)}, which it needs")
        return None

    def _declare_settings(self, store: SettingsStore) -> None:
        for group in self._settings:
            for action in group.actions:
                if action not in self._tools:
                    raise RegistryError(f"settings group {group.title!r}: its button calls "
                                        f"{action!r}, which is no tool of this server")
                if needed := self._needs(action):
                    raise RegistryError(f"settings group {group.title!r}: its button calls "
                                        f"{action!r} with {{}}, and that tool needs "
                                        f"{', '.join(needed)}")
        try:
            declared = compose(self._settings, store)
        except SettingsError as exc:
            raise RegistryError(f"settings: {exc}") from None
        handlers = declared.tools()
        common: dict[str, Any] = {"destructive": False, "open_world": False, "idempotent": True,
                                  # Kept per account: any linked account reads and sets its own.
                                  "security": [schemes.oauth2()]}
        self.tool(name=READ_TOOL, title=say("Your settings for this app"),
                  description="The user's settings for this app: each one's current value, its "
                  "title, and the sections they are shown in.", read_only=True,
                  **common)(read_in_words(handlers[READ_TOOL], declared.titles))
        self.tool(name=UPDATE_TOOL, title=say("Change your settings"),
                  description="Change some of the user's settings for this app (only when the "
                  "user asks): `set` holds each setting to change and its new value.",
                  read_only=False, **common)(update_in_words(handlers[UPDATE_TOOL],
                                                             declared.titles))
        self._capabilities[SETTINGS_CAPABILITY] = declared.capability

    def _declare_mentions(self) -> None:
        sources = list(self._mentions)
        self._capabilities[MENTIONS_CAPABILITY] = {"searchTool": MENTIONS_TOOL}

        @self.tool(
            name=MENTIONS_TOOL,
            title=say("Find something to mention"),
            description="What the person may @-mention in the composer: their own saved items "
            "and public pages, matching the text typed so far.",
            read_only=True,
            destructive=False,
            open_world=False,
            idempotent=True,
            # A linked account: what it finds is its own (each source asks for its scope); the
            # public pages come along. Anonymous, the host is told to link the account.
            security=[schemes.oauth2()],
            visibility=["app"],
            meta={"openai/extensions": {"mentions/search": {}}},
        )
        async def search_mentions(query: Annotated[str, StringConstraints(max_length=200)] = "",
                                  ) -> Annotated[CallToolResult, MentionResults]:
            token = get_access_token()
            items: list[MentionLink] = []
            for source in sources:
                if source.scope is None:
                    items += await source.find(query.strip(), None)
                elif token is not None and token.subject and source.scope in token.scopes:
                    items += await source.find(query.strip(), token.subject)
            found = MentionResults(items=items[:MAX_MENTIONS])
            return CallToolResult(
                content=[TextContent(type="text", text=f"{len(found.items)} to mention.")],
                structured_content=found.model_dump(mode="json", by_alias=True,
                                                    exclude_none=True))

    @property
    def keeps_settings(self) -> bool:
        """Whether some account's choice may be kept: a settings group with settings of its own
        (a group of buttons only keeps nothing)."""
        return READ_TOOL in self._tools and any(g.model.model_fields for g in self._settings)

    @property
    def has_widgets(self) -> bool:
        return bool(self._widgets)

    @property
    def widget_uris(self) -> set[str]:
        """The ``ui://`` URIs of the widgets, each named by its content's hash."""
        return {widget.uri_for(self.widget_domain) for widget in self._widgets.values()}

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    def access(self, name: str, token: AccessToken | None) -> schemes.Access | None:
        """What tool ``name``'s schemes say of ``token`` (None: anonymous); None when there is no such tool.
        The admission of a ``POST /mcp`` asks once, and the tool's wrapper reads its answer."""
        spec = self._tools.get(name)
        if spec is None:
            return None
        return schemes.Access.check(name, spec.kwargs["title"], spec.meta["securitySchemes"], token)

    def explain(self, name: str, arguments: Any) -> ToolFailure | None:
        """What is wrong with ``arguments`` for tool ``name``, for the person and the model, once
        the SDK refused them (``app.mcp.arguments``); None when there is no such tool."""
        spec = self._tools.get(name)
        if spec is None:
            return None
        if spec.arguments is None:
            spec.arguments = Arguments.of(name, spec.kwargs["title"], inspect.unwrap(spec.fn))
        return spec.arguments.explain(arguments if isinstance(arguments, Mapping) else None)

    def title_of(self, name: str) -> str | None:
        spec = self._tools.get(name)
        return spec.kwargs["title"] if spec is not None else None

    def budgets(self) -> dict[str, DeclaredBudget]:
        """Each tool's declared per-caller budget (``app.mcp.budgets``), by tool."""
        return {name: spec.budget for name, spec in self._tools.items() if spec.budget is not None}

    def scopes_used(self) -> dict[str, list[str]]:
        """Each OAuth scope a tool asks for, with the tools that ask for it."""
        used: dict[str, list[str]] = {}
        for name, spec in self._tools.items():
            for scheme in spec.meta["securitySchemes"]:
                for scope in scheme.get("scopes", ()):
                    used.setdefault(scope, []).append(name)
        return used

    def build(self, *, instructions: str | None = None, middleware: list[Any] | None = None,
              request_state: RequestStateSecurity | None = None,
              cache_hints: Mapping[Any, CacheHint] | None = None) -> MCPServer:
        """The SDK's server. ``request_state``: what seals an ``input_required`` result's state
        (None: a
        key of this process only, which a retry landing on another worker could not open)."""
        self.complete()
        apps = Apps()
        for widget in self._widgets.values():
            apps.add_resource(
                TextResource(
                    uri=widget.uri_for(self.widget_domain),
                    name=widget.name,
                    title=widget.title,
                    description=widget.description,
                    text=widget.html,
                    meta=widget.resource_meta(self.widget_domain),
                )
            )
        plain: list[_ToolSpec] = []
        for spec in self._tools.values():
            if spec.widget is None:
                plain.append(spec)
                continue
            apps.tool(
                resource_uri=spec.widget.uri_for(self.widget_domain),
                visibility=spec.visibility,
                meta=spec.meta,
                **spec.kwargs,
            )(spec.fn)
        server = MCPServer(
            self.name,
            title=self.title,
            instructions=instructions,
            version=__version__,
            extensions=[apps],
            # Innermost: OpenAI's form metadata, which the SDK's serialisation drops from an
            # input_required result, put back on it (app.mcp.forms).
            middleware=[*(middleware or []),
                        *([advertise(dict(self._capabilities))] if self._capabilities else []),
                        OpenAIExtensions.middleware],
            request_state_security=request_state,
            cache_hints=cache_hints,
            # Stateless and multi-worker: a subscription made on one worker could never be
            # served by another, so none is offered (initialize and server/discover agree).
            subscriptions=False,
        )
        for spec in plain:
            server.add_tool(spec.fn, meta=spec.meta, **spec.kwargs)
        for resource in self._resources:
            server.resource(resource.template, **resource.kwargs)(resource.fn)
        return server


class McpAdditions:
    """What a feature may add to the SDK's server beyond its tools (``Feature.mcp``): prompts, plain
    resources and the completion handler, with the SDK's own decorators. No ``tool``: a tool is
    declared in the registry, where its schemes are enforced."""

    def __init__(self, server: MCPServer) -> None:
        self._server = server

    def prompt(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        return self._server.prompt(*args, **kwargs)

    def resource(self, *args: Any, **kwargs: Any) -> Callable[[F], F]:
        return self._server.resource(*args, **kwargs)

    def completion(self) -> Callable[[F], F]:
        return self._server.completion()


def _entrypoint_problem(fn: Callable[..., Any], entrypoints: Sequence[OpenAIUiEntrypoint],
                        ) -> str | None:
    """Why the host could not call ``fn`` the way its entrypoints do (None: it can): a global or
    thread entrypoint calls it with ``{}``, a file entrypoint with ``{file: {name, resourceUri}}``.
    """
    if not entrypoints:
        return None
    for entry in entrypoints:
        if isinstance(entry, OpenAIFileEntrypoint):
            if "file" not in _parameters(fn):
                return "a file entrypoint calls the tool with `file` ({name, resourceUri})"
            continue
        if needed := _needs_arguments(fn):
            return f"a {entry.type} entrypoint calls the tool with {{}}, and it needs " \
                   f"{', '.join(needed)}"
    return None


def _parameters(fn: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    """``fn``'s parameters a caller gives (its ``Context`` is the SDK's to give)."""
    try:
        signature = inspect.signature(fn, eval_str=True)
    except Exception:  # an annotation only a type checker resolves: read as written
        signature = inspect.signature(fn)

    def given_by_sdk(p: inspect.Parameter) -> bool:
        hint = p.annotation
        if isinstance(hint, str):
            return hint.split("[")[0].rsplit(".", 1)[-1] == "Context"
        return isinstance(hint, type) and issubclass(hint, Context)

    return {n: p for n, p in signature.parameters.items() if not given_by_sdk(p)}


def _needs_arguments(fn: Callable[..., Any]) -> list[str]:
    """The arguments ``fn`` cannot be called without (a host calling it with ``{}`` fails)."""
    return [n for n, p in _parameters(fn).items() if p.default is inspect.Parameter.empty]


def refusal(title: str, scopes: Sequence[str], resource_metadata_url: str, *, signed_in: bool) -> CallToolResult:
    """The result of a call the tool's schemes do not admit: text for the model, a challenge for ChatGPT."""
    wanted = " ".join(scopes)
    description = schemes.refusal_description(title, scopes, signed_in=signed_in)
    if signed_in:
        said = say("{title} needs a permission your linked account has not given ({wanted}).",
                   title=title, wanted=wanted)
        advice = "Ask the user to reconnect the app and approve it."
    else:
        said = say("{title} needs your account: connect (sign in to) this app to use it.",
                   title=title)
        advice = "Ask the user to connect (sign in to) this app, then try again."
    challenge = schemes.challenge(resource_metadata_url, scopes, description)
    return CallToolResult(content=told_apart(in_language(said), advice), is_error=True,
                          _meta={WWW_AUTHENTICATE: [challenge]})


def failed(tool: str, failure: ToolFailure) -> CallToolResult:
    """The ``isError`` result of a foreseen failure: the message (audience ``user`` and
    ``assistant``), then the advice for the model (audience ``assistant``), so that a widget, which
    shows what is written for the person, never puts instructions meant for the model in front of
    the person. Neither says the SDK's "Error executing tool": the person does not need it, and
    the model knows which tool it called.
    """
    return CallToolResult(content=told_apart(in_language(failure.message), failure.advice),
                          is_error=True)


def _enforced(fn: Callable[..., Any], name: str, title: str, security: list[schemes.Scheme],
              resource_metadata_url: str) -> Callable[..., Awaitable[Any]]:
    """Check the caller against ``security`` before ``fn`` runs; turn foreseen and infrastructure failures
    into ``isError`` results.

    Over HTTP the check was made once, by the request's admission (``app.mcp.admission``): its verdict is
    used. A call that comes another way (an in-memory client) is checked here.

    Anything else a tool raises is left to the SDK, which logs the traceback (with the
    request id bound by the access log) and tells the client only that the tool failed.

    The wrapper is a coroutine function even for a plain ``fn`` (run in a worker thread).
    """
    is_async = inspect.iscoroutinefunction(fn)

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        token = get_access_token()
        admitted = current_admission()
        if admitted is not None and admitted.access is not None and admitted.access.tool == name:
            unmet = admitted.access.unmet
        else:
            unmet = schemes.unmet_scopes(security, token)
        if unmet is not None:
            return refusal(title, unmet, resource_metadata_url, signed_in=token is not None)
        try:
            if is_async:
                result = await fn(*args, **kwargs)
            else:
                result = await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
            if isinstance(result, InputRequiredResult):
                return _asked(name, result, kwargs)
            return result
        except Asking as asking:  # a form for the person (app.mcp.forms), where one can be shown
            return asking.result
        except (ToolFailure, DatabaseUnavailable, DatabaseNotMigrated, StorageError) as exc:
            # The class, never the text: a message may carry what the user sent (a file name, a title).
            log.info("tool.failure", failure=type(exc).__qualname__)
            # app.db and app.storage stay free of the MCP layer: their text is for the person, the
            # advice for the model is said here.
            if isinstance(exc, ToolFailure):
                return failed(name, exc)
            return failed(name, _outage(exc))

    return wrapper


def _outage(exc: Exception) -> ToolFailure:
    """A database or storage failure, said for the person in their language (the exception's own
    text is the same English, for the layers that never translate)."""
    if isinstance(exc, DatabaseNotMigrated):
        return ToolFailure(say("The server's database schema is not up to date; an operator must "
                               "run `python -m app migrate`."), NOT_MIGRATED_ADVICE)
    if isinstance(exc, DatabaseUnavailable):
        return ToolFailure(say("The database is unavailable, please retry shortly."),
                           OUTAGE_ADVICE)
    return ToolFailure(say("File storage is unavailable, please retry shortly."), OUTAGE_ADVICE)


def _asked(name: str, result: InputRequiredResult, kwargs: dict[str, Any]) -> Any:
    """A tool's question (an ``input_required`` result, SEP-2322) goes out on 2026-07-28, the only
    protocol it has a wire on. Asked of an older client, where the SDK would answer -32603 "Handler
    returned an invalid result" and log a traceback, it is a tool error the model can act on. The
    protocol spoken: the tool's ``Context`` (where it reads the answers) tells, else the request's
    admission."""
    context = next((value for value in kwargs.values() if isinstance(value, Context)), None)
    admitted = current_admission()
    version = context.protocol_version if context is not None else (
        admitted.version if admitted is not None else None)
    if version is None or version in MODERN_PROTOCOL_VERSIONS:
        return result  # what protocol was spoken is not known here: the SDK's answer stands
    log.info("tool.input_required_unsupported", protocol_version=version)
    return failed(name, ToolFailure(
        say("It needs an answer from the user first, which a client speaking MCP {version} cannot "
            "be asked for (questions need MCP 2026-07-28).", version=version),
        "Tell the user this cannot be done from this client; do not call the tool again with the "
        "same arguments."))
