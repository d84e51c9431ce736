"""Composition root: settings -> database -> storage -> auth -> features -> MCP server -> one Starlette app.

With ``app.parts`` (what the server is assembled from: the discovered features, the
authorization server when installed, their settings, the seed, the start-up rules), the only
module that knows every piece; nothing below knows which features exist. ``create_app``
reads as the list of pieces it wires.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import anyio.to_thread
import structlog
from mcp.server.auth.provider import TokenVerifier
from mcp.server.mcpserver import MCPServer, RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.methods import SPEC_CLIENT_METHODS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from app.auth.challenge import HttpChallenge
from app.auth.resource_server import bearer_auth, protected_resource_routes
from app.auth.scopes import ScopeCatalog
from app.auth.tokens import ExternalTokenVerifier, RemoteJwks
from app.broadcast import open_broadcast
from app.db import Database
from app.directory.routes import directory_routes
from app.feature import Deps, Feature, LocalAccounts, require_account
from app.http.bounds import ClientBounds
from app.http.devhost import DevFiles, devhost_routes
from app.http.health import health_routes
from app.http.inflight import InFlight
from app.http.middleware import AccessLogMiddleware, McpPathAlias, client_address, log_written_through_shutdown
from app.limits import Budget, Limits, Rate, Sharing, parse_rate
from app.logging import RecentEvents
from app.mcp.admission import Lane, McpAdmission
from app.mcp.budgets import Charge, ToolBudgets
from app.mcp.registry import McpAdditions, ToolRegistry
from app.mcp.server import build_mcp_server
from app.mcp.widget_log import register_widget_log
from app.net.guard import OutboundGuard
from app.observability.metrics import Metrics, scrape_routes
from app.observability.traces import Tracing, configure_tracing
from app.parts import (
    AuthorizationServer,
    FeatureError,
    SpeedUps,
    StartupRefused,
    authorization_server,
    discover_features,
    documents_of,
    feature_parts,
    forget_everywhere,
    production_refusals,
    scope_catalog,
    tuning,
)
from app.preferences import PRIVACY as SETTINGS_PRIVACY
from app.preferences import Preferences
from app.secret import load_secret, request_state_keys
from app.settings import Settings, SettingsError, SettingsPart, load_settings
from app.storage import LocalStorage, Storage

WIDGET_HINT = "Results render in widgets; do not repeat what a widget already shows."

FORM_SECONDS = 1800  # how long a question's sealed state opens (requestState)


def open_database(settings: Settings, speedups: SpeedUps | None = None) -> Database:
    """The database; its calls hop to threads of the speed-up package's when given, else anyio's."""
    more = {"hops": speedups.hops} if speedups is not None and speedups.hops is not None else {}
    return Database(settings.database_url, pool_size=settings.db_pool_size, read_threads=settings.db_read_threads,
                    connect_timeout=settings.db_connect_timeout, statement_timeout=settings.db_statement_timeout,
                    **more)


def open_storage(settings: Settings) -> Storage:
    """The backend of every byte at rest (uploads, reports): S3 (any S3-compatible service) or a local folder."""
    if settings.storage_backend == "s3":
        from app.storage.s3 import S3Storage  # boto3 is slow to import: only deployments on S3 pay for it

        return S3Storage(bucket=settings.s3_bucket or "", prefix=settings.s3_prefix, region=settings.s3_region,
                         endpoint_url=settings.s3_endpoint_url,
                         sse=None if settings.s3_sse == "none" else settings.s3_sse,
                         kms_key_id=settings.s3_kms_key_id)
    secret, _ = load_secret(settings)  # production without APP_SECRET_KEY was refused (production_refusals)
    # Its own key, derived: a download link can never double as a form ticket or the other way round.
    link_key = hashlib.sha256(b"file download links\0" + secret).digest()
    return LocalStorage(Path(settings.storage_dir), base_url=settings.base_url, secret=link_key)


def open_limits(settings: Settings) -> Limits:
    """Where every limit is counted: Redis for the fleet (APP_REDIS_URL), else this process."""
    sharing = Sharing(callers_per_address=settings.limit_callers_per_address,
                      anonymous_callers=settings.limit_anonymous_callers)
    if settings.redis_url:
        return Limits.redis(settings.redis_url, settings.redis_prefix, sharing)
    return Limits.in_process(sharing)


def tool_charges(registry: ToolRegistry, settings: Settings) -> dict[str, Charge]:
    """What each tool's call is charged: the budgets the tools declare, with APP_TOOL_BUDGETS over them (by
    budget name; a tool that declares none may be given one by its own name, or ``off``)."""
    declared = registry.budgets()
    rates: dict[str, Rate | None] = {}
    for budget in declared.values():
        if rates.setdefault(budget.name, budget.rate) != budget.rate:
            raise FeatureError(f"the tools sharing budget {budget.name!r} declare different rates")
    budget_of = {tool: budget.name for tool, budget in declared.items()}
    known = set(rates) | (set(registry.tool_names) - set(budget_of))
    if unknown := sorted(set(settings.tool_budgets) - known):
        raise FeatureError(f"APP_TOOL_BUDGETS names no budget or tool: {', '.join(unknown)} "
                           f"(budgets: {', '.join(sorted(rates)) or 'none'})")
    for name, rate in settings.tool_budgets.items():
        rates[name] = parse_rate(rate) if rate else None
        if name in registry.tool_names:  # a tool without a budget of its own, given one
            budget_of.setdefault(name, name)
    return {tool: Charge(Budget(f"tool.{name}", rate), declared[tool].cost if tool in declared else None)
            for tool, name in budget_of.items() if (rate := rates[name]) is not None}


def build_deps(settings: Settings, db: Database, features: Sequence[Feature], *, guard: OutboundGuard | None = None,
               storage: Storage | None = None, limits: Limits | None = None, accounts: LocalAccounts | None = None,
               parts: Sequence[SettingsPart] = ()) -> Deps:
    """The shared services: each the one given (tests), else the one the settings describe."""
    return Deps(settings=settings, db=db, limits=limits or open_limits(settings),
                guard=guard or OutboundGuard(allowlist=settings.outbound_allowlist, ports=settings.outbound_ports),
                storage=storage or open_storage(settings), documents=documents_of(features), accounts=accounts,
                parts=feature_parts(features, parts),
                broadcast=open_broadcast(settings.redis_url, settings.redis_prefix))


async def run_command(settings: Settings, feature_name: str, command: str) -> str:
    """``python -m app <feature> <command>``: a feature's maintenance command, with the shared services."""
    features = discover_features()
    feature = next((f for f in features if f.name == feature_name), None)
    if feature is None:
        raise FeatureError(f"no feature named {feature_name!r} is installed")
    run = feature.commands.get(command)
    if run is None:
        known = ", ".join(sorted(feature.commands)) or "none"
        raise FeatureError(f"feature {feature_name!r} has no command {command!r} (it has: {known})")
    server = authorization_server(settings)
    db = open_database(settings)
    deps = build_deps(settings, db, features, accounts=server.accounts if server else None)
    try:
        return await run(deps)
    finally:
        await deps.storage.aclose()
        await deps.limits.aclose()
        db.dispose()


def server_instructions(features: Sequence[Feature]) -> str:
    return " ".join([*(f.instructions for f in features if f.instructions), WIDGET_HINT])


def build_auth(settings: Settings, deps: Deps, catalog: ScopeCatalog, server: AuthorizationServer | None,
               token_verifier: TokenVerifier | None, metrics: Metrics | None,
               features: Sequence[Feature]) -> tuple[TokenVerifier, list[BaseRoute]]:
    """The token verifier for /mcp (the one given, in tests), the metadata document of /mcp, and the
    authorization server's routes when it is the built-in one."""
    routes = protected_resource_routes(settings.mcp_url, settings.resource_metadata_url, settings.issuer,
                                       catalog.names, settings.server_title)
    if server is None:
        # The IdP's key set is fetched from the port the operator named (an IdP on 8443), and from no other one
        # that APP_OUTBOUND_PORTS does not open for every fetch.
        jwks_port = urlsplit(settings.oauth_jwks_url or "").port
        guard = deps.guard if jwks_port is None else OutboundGuard(
            allowlist=settings.outbound_allowlist, ports=[*settings.outbound_ports, jwks_port])
        verifier = ExternalTokenVerifier(RemoteJwks(settings.oauth_jwks_url or "", guard),
                                         issuer=settings.issuer, audience=settings.token_audience,
                                         resource=settings.mcp_url, catalog=catalog)
        return token_verifier or verifier, routes
    verifier, server_routes = server.build(deps.db, catalog, deps.guard, deps.limits, metrics,
                                           deps.broadcast, forget_everywhere(features, deps))
    return token_verifier or verifier, routes + server_routes


def build_registry(settings: Settings, features: Sequence[Feature], deps: Deps,
                   catalog: ScopeCatalog) -> tuple[ToolRegistry, list[BaseRoute]]:
    """Every feature's tools (and the widget log when there are widgets), and the routes features add."""
    registry = ToolRegistry(name=settings.server_name, title=settings.server_title,
                            widget_domain=settings.widget_domain,
                            resource_metadata_url=settings.resource_metadata_url)
    # Each account's settings, from the groups the features declare (app.mcp.settings).
    registry.settings_store = Preferences(
        deps.db, lambda uow, subject: require_account(deps.accounts, uow, subject))
    routes: list[BaseRoute] = []
    for feature in features:
        if feature.tools is not None:
            feature.tools(registry, deps)
        if feature.routes is not None:
            routes.extend(feature.routes(deps))
    if registry.has_widgets:
        register_widget_log(registry, deps.limits)
    registry.complete()  # the tools the features' contributions make (@-mentions, settings)
    if undeclared := {s: tools for s, tools in registry.scopes_used().items() if s not in catalog}:
        raise FeatureError("; ".join(f"tools {', '.join(tools)} ask for scope {scope!r}, which no feature declares "
                                     f"(add Scope({scope!r}, ...) to the feature's scopes)"
                                     for scope, tools in undeclared.items()))
    return registry, routes


def observe(deps: Deps, features: Sequence[Feature], registry: ToolRegistry, metrics: Metrics | None,
            tracing: Tracing | None) -> list[BaseRoute]:
    """Metrics and traces know the tools and methods (their label values), the pool, the limits' refusals and
    the features' gauges; returns the scrape route."""
    routes: list[BaseRoute] = []
    if metrics is not None:
        metrics.watch_pool(deps.db.engine)
        deps.limits.on_refused = metrics.limit_refused
        metrics.know(methods=SPEC_CLIENT_METHODS, tools=registry.tool_names)
        for gauges in (f.gauges for f in features if f.gauges is not None):  # each apart: one failing leaves the rest
            metrics.read_at_scrape(lambda gauges=gauges: deps.db.read_sync(lambda uow: list(gauges(uow))))
        routes.extend(scrape_routes(metrics, deps.settings.metrics_scrapers))
    if tracing is not None:
        tracing.instrument_engine(deps.db.engine)
        tracing.know(methods=SPEC_CLIENT_METHODS, tools=registry.tool_names)
    return routes


class McpEndpoint(NamedTuple):
    server: MCPServer
    lane: Lane | None
    # The SDK's stateless transport in its SSE mode, over the same server: what answers a request
    # that asks for progress (a progressToken), whose notifications a JSON answer has no room for.
    streamed: StreamableHTTPSessionManager
    app: ASGIApp  # POST/DELETE /mcp: the bearer check, then the admission, which routes to the lane or the SDK


def build_mcp(settings: Settings, registry: ToolRegistry, features: Sequence[Feature], deps: Deps,
              token_verifier: TokenVerifier, metrics: Metrics | None, speedups: SpeedUps | None) -> McpEndpoint:
    # Shared by every worker and replica (the SDK checks expiry, the arguments, the audience and the
    # caller on each retry): an input_required answered on one may be completed on any other.
    # Half an hour: a person may leave a form open (app/mcp/forms.py) longer than the SDK's 10 min.
    sealing = RequestStateSecurity(keys=request_state_keys(settings), ttl=FORM_SECONDS)
    mcp = build_mcp_server(
        registry,
        ToolBudgets(deps.limits, tool_charges(registry, settings)),
        instructions=server_instructions(features),
        metrics=metrics,
        request_state=sealing,
    )
    for feature in features:
        if feature.mcp is not None:
            feature.mcp(McpAdditions(mcp), deps)
    # Builds the SDK's stateless JSON transport; its Starlette wrapper (one route, its own lifespan) is not
    # used: /mcp reaches the session manager directly, and our lifespan runs the manager.
    mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,  # the admission refuses a larger body first
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=settings.host_allow_list,
            allowed_origins=settings.origin_allow_list,
        ),
    )
    manager = mcp.session_manager
    streamed = StreamableHTTPSessionManager(manager.app, stateless=True, json_response=False,
                                            security_settings=manager.security_settings,
                                            max_request_body_size=settings.max_body_bytes)
    lane = speedups.lane(manager) if speedups is not None else None
    challenge = None
    if settings.auth_challenge != "meta":
        def observe(tool: str, seconds: float) -> None:  # counted as the SDK path counts a refused call
            if metrics is not None:
                metrics.mcp_operation("tools/call", tool, "tool_error", seconds)

        challenge = HttpChallenge(settings.resource_metadata_url, settings.auth_challenge, observe)
    # The token is optional on /mcp: each tool's schemes decide, once, in the admission (app.mcp.registry).
    admission = McpAdmission(manager.handle_request, manager, access=registry.access, challenge=challenge,
                             max_body_bytes=settings.max_body_bytes, lane=lane,
                             streamed=streamed.handle_request)
    endpoint = bearer_auth(admission, token_verifier, resource=settings.mcp_url,
                           resource_metadata_url=settings.resource_metadata_url)
    return McpEndpoint(mcp, lane, streamed, endpoint)


def lifespan_of(deps: Deps, mcp: McpEndpoint, tracing: Tracing | None, speedups: SpeedUps | None
                ) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            await deps.limits.start()
            async with (
                deps.broadcast.running(),
                mcp.server.session_manager.run(),
                mcp.streamed.run(),
                mcp.lane.run() if mcp.lane else contextlib.nullcontext(),
            ):
                if speedups is not None:
                    speedups.settle()
                yield
        finally:
            try:
                await deps.storage.aclose()
                await deps.limits.aclose()
                deps.db.dispose()
            finally:
                if tracing is not None:  # what is batched goes out before the worker ends (at most 5 s)
                    await anyio.to_thread.run_sync(tracing.shutdown)

    return lifespan


def core_routes(settings: Settings, deps: Deps, mcp_name: str, mcp_route: Route,
                recent_events: RecentEvents | None,
                kept: Sequence[Mapping[str, str]] = (), traced: bool = False) -> list[BaseRoute]:
    async def index(_: Request) -> JSONResponse:
        return JSONResponse({"name": mcp_name, "mcp": settings.mcp_url})

    async def no_standalone_stream(_: Request) -> Response:
        # Stateless server: there is no session for a GET stream to belong to, and an idle
        # stream would pin a connection forever. The transport spec lets servers answer 405.
        return Response(status_code=405, headers={"allow": "POST"})

    # Local files are downloaded from this app through signed links; S3 serves its own presigned URLs.
    storage_routes = deps.storage.routes() if isinstance(deps.storage, LocalStorage) else []
    dev_routes = [] if settings.production else devhost_routes(recent_events, DevFiles())
    # /mcp first: it carries nearly all the traffic, and the router tries the routes in order. Only /mcp passes
    # the bearer check: feature routes (OAuth endpoints take client credentials in Authorization) never see it.
    return [mcp_route, Route("/mcp", no_standalone_stream, methods=["GET"]),
            Route("/", index, methods=["GET"]), *health_routes(deps.db, deps.limits),
            *directory_routes(settings, kept, traced), *storage_routes, *dev_routes]


def privacy_kept(server: AuthorizationServer | None, features: Sequence[Feature],
                 deps: Deps, registry: ToolRegistry | None = None) -> list[Mapping[str, str]]:
    """What each installed part keeps about a person, in its own sentences (the privacy page)."""
    kept: list[Mapping[str, str]] = list(server.privacy()) if server is not None else []
    if registry is not None and registry.keeps_settings:
        kept.append(SETTINGS_PRIVACY)
    for feature in features:
        if feature.privacy is not None:
            said = list(feature.privacy(deps))
            if missing := [s for s in said if "en" not in s]:
                raise FeatureError(f"feature {feature.name!r}: a privacy sentence has no English "
                                   f"('en'), the language every page falls back to: {missing[0]}")
            kept.extend(said)
    return kept


def mcp_route(mcp_app: ASGIApp) -> Route:
    """``POST``/``DELETE /mcp``: the route the speed-up package may take the app past the router to."""
    return Route("/mcp", mcp_app, methods=["POST", "DELETE"])


def served(app: Starlette, settings: Settings, metrics: Metrics | None, tracing: Tracing | None,
           speedups: SpeedUps | None, mcp: Route) -> ASGIApp:
    """The middleware around the routes, innermost first. ``mcp``: the app's POST/DELETE /mcp route."""
    routed: ASGIApp = app
    if speedups is not None:  # /mcp past the router (its first route)
        routed = speedups.route(app, mcp)
    # Requests in flight capped before anything reads a body; inside the access log, which records
    # a refusal.
    capped = InFlight(McpPathAlias(routed), total=settings.max_requests_in_flight,
                      per_client=settings.max_requests_in_flight_per_client,
                      body_bytes=settings.max_body_bytes_in_flight,
                      max_body=settings.max_body_bytes)
    logged: ASGIApp = AccessLogMiddleware(capped, metrics)
    if tracing is not None:  # the server span: around the access log, so its lines carry the span's ids
        logged = tracing.wrap(logged)
    # A head past the bound (431) and a body that does not arrive in time (408), whatever serves the app; the
    # access log (inside) sees a request cut so as the client's leaving (499), as under the speed-up protocol.
    bounded = ClientBounds(logged, body_timeout=settings.http_body_timeout)
    # Outermost: every layer below, the access log and every limit included, sees the trusted client address.
    return client_address(bounded, settings.trusted_proxies)


def create_app(
    settings: Settings,
    *,
    db: Database | None = None,
    token_verifier: TokenVerifier | None = None,
    features: Sequence[Feature] | None = None,
    guard: OutboundGuard | None = None,
    storage: Storage | None = None,
    limits: Limits | None = None,
    recent_events: RecentEvents | None = None,
    metrics: Metrics | None = None,
    tracing: Tracing | None = None,
    parts: Sequence[SettingsPart] = (),
) -> ASGIApp:
    """The whole service as one ASGI app. Each piece given (tests) replaces the one the settings describe;
    ``parts``: settings of the authorization server or of a feature, instead of reading them from the
    environment. ``metrics``: this process's families (new ones when APP_METRICS is on); ``tracing``: the
    worker's tracer provider, None for no spans (``create_app_from_env`` configures it from OTEL_*)."""
    features = discover_features() if features is None else list(features)
    server = authorization_server(settings, parts)
    if refusals := production_refusals(settings, server):
        raise StartupRefused("\n".join(refusals))
    speedups = tuning(settings)
    deps = build_deps(settings, db or open_database(settings, speedups), features, guard=guard, storage=storage,
                      limits=limits, accounts=server.accounts if server else None, parts=parts)
    if metrics is None and settings.metrics:
        metrics = Metrics()
    catalog = scope_catalog(features)
    token_verifier, auth_routes = build_auth(settings, deps, catalog, server, token_verifier,
                                             metrics, features)
    registry, feature_routes = build_registry(settings, features, deps, catalog)
    metrics_routes = observe(deps, features, registry, metrics, tracing)
    mcp = build_mcp(settings, registry, features, deps, token_verifier, metrics, speedups)
    route = mcp_route(mcp.app)
    app = Starlette(
        routes=[*core_routes(settings, deps, mcp.server.name, route, recent_events,
                             privacy_kept(server, features, deps, registry), tracing is not None),
                *metrics_routes, *auth_routes, *feature_routes],
        lifespan=lifespan_of(deps, mcp, tracing, speedups),
        exception_handlers={Exception: internal_error},
    )
    return served(app, settings, metrics, tracing, speedups, route)


async def internal_error(_: Request, __: Exception) -> JSONResponse:
    # Starlette answers a crashed route itself; make that answer JSON with the request id.
    # The exception is re-raised after this and logged once, by the access log.
    request_id = structlog.contextvars.get_contextvars().get("request_id")
    return JSONResponse({"error": "internal_error", "request_id": request_id}, status_code=500)


def settings_or_exit() -> Settings:
    """Settings from the environment; on a bad value, one line per variable on stderr and exit 2."""
    try:
        return load_settings()
    except SettingsError as exc:
        for line in exc.lines:
            print(line, file=sys.stderr)
        raise SystemExit(2) from None


def create_app_from_env(features: Sequence[Feature] | None = None) -> ASGIApp:
    """uvicorn factory (``--factory``): each worker reads the environment once. ``features`` replaces discovery
    (a factory of a test's own serves test-only features through this same path)."""
    from app.logging import configure_logging, on_dropped_lines

    settings = settings_or_exit()
    # The dev host page shows a widget session's log events; production keeps none in memory.
    recent = None if settings.production else RecentEvents()
    configure_logging(settings.log_format, settings.log_level, recent)
    metrics = Metrics() if settings.metrics else None
    on_dropped_lines(metrics.log_lines_dropped.inc if metrics is not None else None)
    tracing = configure_tracing()  # serve refused a bad OTEL_* setting before the workers started
    return log_written_through_shutdown(create_app(settings, recent_events=recent, features=features,
                                                   metrics=metrics, tracing=tracing))
