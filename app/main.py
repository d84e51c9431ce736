"""Composition root: settings -> database -> storage -> auth -> features -> MCP server -> one Starlette app.

This is the only module that knows every piece. Features are discovered here (one
folder each under ``app/features``) and wired in; nothing below knows which
features exist.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import anyio.to_thread
import structlog
from mcp.server.auth.provider import TokenVerifier
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.methods import SPEC_CLIENT_METHODS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from app.auth.accounts import AccountRepository, seed_demo_accounts
from app.auth.clients import CimdResolver, ClientKeys
from app.auth.keys import load_keyring, load_secret
from app.auth.resource_server import bearer_auth, protected_resource_routes
from app.auth.routes import AuthorizationServerRoutes, RegistrationLimits, Signer, SignInLimits
from app.auth.scopes import ScopeCatalog
from app.auth.server import GrantRepository, ServerConfig, normalise_resource
from app.auth.tokens import BuiltinTokenVerifier, ExternalTokenVerifier, RemoteJwks
from app.db import Database
from app.db.locks import SEED_LOCK, advisory_lock
from app.feature import Deps, Feature, PrivateDocuments
from app.http.devhost import DevFiles, devhost_routes
from app.http.health import health_routes
from app.http.middleware import (
    AccessLogMiddleware,
    McpRequestNormalizer,
    Shortcut,
    client_address,
    log_written_through_shutdown,
)
from app.limits import Budget, Limits, Rate, Sharing, parse_rate
from app.logging import RecentEvents
from app.mcp.budgets import Charge, ToolBudgets
from app.mcp.lane import SingleExchangeLane
from app.mcp.registry import ToolRegistry
from app.mcp.server import build_mcp_server
from app.mcp.widget_log import register_widget_log
from app.net.guard import OutboundGuard
from app.observability.metrics import Metrics, scrape_routes
from app.observability.traces import Tracing, configure_tracing
from app.settings import Settings, SettingsError, load_settings
from app.storage import LocalStorage, Storage

FEATURES_PACKAGE = "app.features"
WIDGET_HINT = "Results render in widgets; do not repeat what a widget already shows."


CORE_MODELS = ("app.auth.models",)


class FeatureError(RuntimeError):
    """A feature folder that cannot be loaded; the message says which and why."""


class StartupRefused(RuntimeError):
    """A configuration this server will not run with; the message names the setting to change."""


def load_core_models() -> None:
    """Import the tables that are not a feature's (accounts, OAuth), completing Base.metadata for alembic."""
    for module in CORE_MODELS:
        importlib.import_module(module)


def discover_features(package: str = FEATURES_PACKAGE) -> list[Feature]:
    """Every folder under ``app/features`` is one feature; its ``__init__`` defines ``FEATURE``."""
    root = Path(str(importlib.import_module(package).__path__[0]))
    features: list[Feature] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        if not any(child.name != "__pycache__" for child in folder.iterdir()):
            continue  # what `git rm -r` leaves behind: compiled files only
        if not (folder / "__init__.py").is_file():
            raise FeatureError(f"{folder} is not a feature: it has no __init__.py (add one that defines "
                               f"FEATURE = Feature(...), or delete the folder)")
        try:
            module = importlib.import_module(f"{package}.{folder.name}")
        except ValueError as exc:  # a declaration refused at import (a Widget, a scheme): say where
            raise FeatureError(f"{folder}: {exc}") from exc
        feature = getattr(module, "FEATURE", None)
        if not isinstance(feature, Feature):
            raise FeatureError(f"{folder}/__init__.py must define FEATURE = Feature(...)")
        if (folder / "models.py").is_file():
            importlib.import_module(f"{package}.{folder.name}.models")  # complete Base.metadata for alembic
        features.append(feature)
    names = [f.name for f in features]
    if duplicates := sorted({n for n in names if names.count(n) > 1}):
        raise FeatureError(f"feature names must be unique: {', '.join(duplicates)}")
    return features


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
GENERATED = ("a generated one would differ per replica and be lost with the disk; set it, or "
             "APP_ALLOW_GENERATED_KEYS=true")


def production_refusals(settings: Settings) -> list[str]:
    """What a production server must not start with, all of it at once, one line per variable."""
    if not settings.production:
        return []
    lines = []
    if "base_url" not in settings.model_fields_set:
        lines.append("APP_BASE_URL: APP_ENV=production needs the https URL ChatGPT reaches this server at "
                     "(e.g. https://mcp.example.com): it is in the OAuth metadata, the challenges and the links")
    elif (base := urlsplit(settings.base_url)).scheme != "https" and base.hostname not in LOOPBACK_HOSTS:
        lines.append(f"APP_BASE_URL: APP_ENV=production needs https (got {settings.base_url!r}): tokens and "
                     "sign-in forms never cross a network in the clear")
    if not settings.allow_generated_keys:
        if settings.auth_mode == "builtin" and not settings.oauth_signing_keys:
            lines.append(f"APP_OAUTH_SIGNING_KEYS: APP_ENV=production needs the keys that sign access tokens; "
                         f"{GENERATED}")
        uses = [use for use, needed in (("the sign-in forms", settings.auth_mode == "builtin"),
                                        ("the download links of APP_STORAGE_BACKEND=local",
                                         settings.storage_backend == "local")) if needed]
        if uses and not settings.secret_key:
            lines.append(f"APP_SECRET_KEY: APP_ENV=production needs it (it signs {' and '.join(uses)}); {GENERATED}")
    return lines


def open_database(settings: Settings) -> Database:
    return Database(settings.database_url, pool_size=settings.db_pool_size,
                    connect_timeout=settings.db_connect_timeout, statement_timeout=settings.db_statement_timeout)


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
    return LocalStorage(Path(settings.files_dir), base_url=settings.base_url, secret=link_key)


def documents_of(features: Sequence[Feature]) -> PrivateDocuments | None:
    offered = [f for f in features if f.documents is not None]
    if len(offered) > 1:
        raise FeatureError(f"only one feature may index private documents ({', '.join(f.name for f in offered)})")
    return offered[0].documents if offered else None


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
               storage: Storage | None = None, limits: Limits | None = None) -> Deps:
    """The shared services: each the one given (tests), else the one the settings describe."""
    return Deps(settings=settings, db=db, limits=limits or open_limits(settings),
                guard=guard or OutboundGuard(allowlist=settings.outbound_allowlist),
                storage=storage or open_storage(settings), documents=documents_of(features))


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
    db = open_database(settings)
    deps = build_deps(settings, db, features)
    try:
        return await run(deps)
    finally:
        await deps.storage.aclose()
        await deps.limits.aclose()
        db.dispose()


def server_instructions(features: Sequence[Feature]) -> str:
    return " ".join([*(f.instructions for f in features if f.instructions), WIDGET_HINT])


def seed(db: Database, features: Sequence[Feature], settings: Settings) -> list[str]:
    """Demo accounts (development), then every feature's idempotent seed, one transaction each;
    returns one summary line per step.

    Replicas starting together take turns (PostgreSQL advisory lock): the later ones find
    every row already current and write nothing.
    """
    lines = []
    with db.engine.connect() as lock_holder, advisory_lock(lock_holder, SEED_LOCK):
        if settings.auth_mode == "builtin" and (not settings.production or settings.allow_demo_accounts):
            lines.append(f"accounts: {db.write_sync(lambda uow: seed_demo_accounts(uow, settings.demo_password))}")
        lines += [f"{f.name}: {db.write_sync(f.seed)}" for f in features if f.seed is not None]
    return lines


def refuse_demo_accounts(settings: Settings, db: Database) -> None:
    """Production with the demo accounts (known password) still in the database: refuse to serve."""
    if settings.production and not settings.allow_demo_accounts:
        demo = db.read_sync(lambda uow: [a.username for a in uow.repository(AccountRepository).demo()
                                         if a.disabled_at is None])  # disabled: their password opens nothing
        if demo:
            raise StartupRefused(f"APP_ENV=production but demo accounts exist ({', '.join(demo)}): disable them with "
                                 "`python -m app users disable NAME`, or set APP_ALLOW_DEMO_ACCOUNTS=true")


def build_auth(settings: Settings, db: Database, catalog: ScopeCatalog, guard: OutboundGuard, limits: Limits,
               token_verifier: TokenVerifier | None, metrics: Metrics | None = None
               ) -> tuple[TokenVerifier, list[BaseRoute]]:
    """The token verifier for /mcp and the routes of the metadata documents and the authorization server."""
    routes = protected_resource_routes(settings.mcp_url, settings.resource_metadata_url, settings.issuer,
                                       catalog.names, settings.server_title)
    if settings.auth_mode == "external":
        verifier = ExternalTokenVerifier(RemoteJwks(settings.oauth_jwks_url or "", guard), issuer=settings.issuer,
                                         audience=settings.token_audience, resource=settings.mcp_url, catalog=catalog)
        return token_verifier or verifier, routes
    keys = load_keyring(settings)  # production without keys of its own was refused (production_refusals)
    secret, _ = load_secret(settings)
    resource = normalise_resource(settings.mcp_url) or settings.mcp_url
    config = ServerConfig(issuer=settings.base_url, resources=(resource,), catalog=catalog, keys=keys,
                          access_ttl=settings.oauth_access_token_ttl, refresh_ttl=settings.oauth_refresh_token_ttl,
                          refresh_grace=settings.oauth_refresh_grace, code_ttl=settings.oauth_code_ttl)
    server = AuthorizationServerRoutes(
        config=config, db=db, cimd=CimdResolver(guard, db, catalog, settings.oauth_cimd_hosts),
        client_keys=ClientKeys(guard), signer=Signer(secret), limits=limits,
        sign_in=SignInLimits(per_name=parse_rate(settings.limit_login_per_name),
                             per_address=parse_rate(settings.limit_login_per_address),
                             per_account=parse_rate(settings.limit_login_per_account)),
        registration=RegistrationLimits(per_address=parse_rate(settings.limit_registrations_per_address),
                                        total=parse_rate(settings.limit_registrations_total)),
        secure_cookies=settings.base_url.startswith("https://"), jwks=keys.public_jwks, metrics=metrics)

    async def grant_active(grant_id: str, subject: str) -> bool:
        return await db.read(lambda uow: uow.repository(GrantRepository).grant_active(grant_id, subject))

    verifier = BuiltinTokenVerifier(keys, issuer=settings.base_url, audience=resource, catalog=catalog,
                                    grant_active=grant_active)
    return token_verifier or verifier, routes + server.routes()


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
) -> ASGIApp:
    """The whole service as one ASGI app. ``metrics``: this process's families (by default new ones when
    APP_METRICS is on); ``tracing``: the worker's tracer provider, None for no spans (``create_app_from_env``
    configures it from OTEL_*)."""
    if refusals := production_refusals(settings):
        raise StartupRefused("\n".join(refusals))
    features = discover_features() if features is None else list(features)
    db = db or open_database(settings)
    deps = build_deps(settings, db, features, guard=guard, storage=storage, limits=limits)
    guard, storage, limits = deps.guard, deps.storage, deps.limits
    if metrics is None and settings.metrics:
        metrics = Metrics()
    if metrics is not None:
        metrics.watch_pool(db.engine)
        limits.on_refused = metrics.limit_refused
    if tracing is not None:
        tracing.instrument_engine(db.engine)
    try:
        catalog = ScopeCatalog(scope for feature in features for scope in feature.scopes)
    except ValueError as exc:
        raise FeatureError(str(exc)) from None
    token_verifier, auth_routes = build_auth(settings, db, catalog, guard, limits, token_verifier, metrics)
    # Local files are downloaded from this app through signed links; S3 serves its own presigned URLs.
    storage_routes = storage.routes() if isinstance(storage, LocalStorage) else []

    registry = ToolRegistry(name=settings.server_name, title=settings.server_title,
                            widget_domain=settings.widget_domain,
                            resource_metadata_url=settings.resource_metadata_url)
    feature_routes: list[BaseRoute] = []
    for feature in features:
        if feature.tools is not None:
            feature.tools(registry, deps)
        if feature.routes is not None:
            feature_routes.extend(feature.routes(deps))
    if registry.has_widgets:
        register_widget_log(registry, limits)
    if undeclared := {s: tools for s, tools in registry.scopes_used().items() if s not in catalog}:
        raise FeatureError("; ".join(f"tools {', '.join(tools)} ask for scope {scope!r}, which no feature declares "
                                     f"(add Scope({scope!r}, ...) to the feature's scopes)"
                                     for scope, tools in undeclared.items()))
    metrics_routes: list[BaseRoute] = []
    if metrics is not None:
        metrics.know(methods=SPEC_CLIENT_METHODS, tools=registry.tool_names)
        for gauges in (f.gauges for f in features if f.gauges is not None):  # each apart: one failing leaves the rest
            metrics.read_at_scrape(lambda gauges=gauges: db.read_sync(lambda uow: list(gauges(uow))))
        metrics_routes.extend(scrape_routes(metrics, settings.metrics_scrapers))
    if tracing is not None:
        tracing.know(methods=SPEC_CLIENT_METHODS, tools=registry.tool_names)
    mcp = build_mcp_server(registry, ToolBudgets(limits, tool_charges(registry, settings)),
                           instructions=server_instructions(features), metrics=metrics)
    # Builds the SDK's stateless JSON transport; its Starlette wrapper (one route, its own lifespan) is not
    # used: /mcp reaches the session manager directly, and our lifespan runs the manager.
    mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        # The SDK's limit is the one body limit on /mcp (declared and chunked bodies alike).
        max_request_body_size=settings.max_body_bytes,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=settings.host_allow_list,
            allowed_origins=settings.origin_allow_list,
        ),
    )
    mcp_http: ASGIApp = mcp.session_manager.handle_request
    lane = None
    if settings.mcp_fast_lane:
        mcp_http = lane = SingleExchangeLane(mcp.session_manager, mcp_http)
    # The token is optional on /mcp: each tool enforces its own schemes (app.mcp.registry).
    mcp_endpoint = bearer_auth(mcp_http, token_verifier, resource=settings.mcp_url,
                               resource_metadata_url=settings.resource_metadata_url)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            await limits.start()
            async with mcp.session_manager.run(), (lane.run() if lane else contextlib.nullcontext()):
                freeze_startup_objects()
                yield
        finally:
            try:
                await storage.aclose()
                await limits.aclose()
                db.dispose()
            finally:
                if tracing is not None:  # what is batched goes out before the worker ends (at most 5 s)
                    await anyio.to_thread.run_sync(tracing.shutdown)

    async def index(_: Request) -> JSONResponse:
        return JSONResponse({"name": mcp.name, "mcp": settings.mcp_url})

    async def no_standalone_stream(_: Request) -> Response:
        # Stateless server: there is no session for a GET stream to belong to, and an idle
        # stream would pin a connection forever. The transport spec lets servers answer 405.
        return Response(status_code=405, headers={"allow": "POST"})

    app = Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            *health_routes(db, limits),
            *metrics_routes,
            *auth_routes,
            *storage_routes,
            *feature_routes,
            *([] if settings.production else devhost_routes(recent_events, DevFiles(settings.files_max_bytes))),
            Route("/mcp", no_standalone_stream, methods=["GET"]),
        ],
        lifespan=lifespan,
        exception_handlers={Exception: internal_error},
    )
    # Only /mcp passes the bearer check: feature routes (OAuth endpoints take client credentials in
    # Authorization) and unknown paths never see it.
    routed = Shortcut(app, "/mcp", ("POST", "DELETE"), mcp_endpoint)
    # Outermost: every layer below, the access log and every limit included, sees the trusted client address.
    served: ASGIApp = AccessLogMiddleware(McpRequestNormalizer(routed, max_body_bytes=settings.max_body_bytes),
                                          metrics)
    if tracing is not None:  # the server span: around the access log, so its lines carry the span's ids
        served = tracing.wrap(served)
    return client_address(served, settings.trusted_proxies)


_frozen = False


def freeze_startup_objects() -> None:
    """Everything built at start-up lives as long as the worker: keep it out of the collector's full
    passes, which otherwise walk it again and again under load (p99 pauses). Once per process."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()  # start-up garbage goes now, not into the frozen set
        gc.freeze()


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
