"""Application factory: one Starlette app serving /mcp, health probes and (later) OAuth."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from app.auth.principal import PrincipalMiddleware, Resolver, anonymous_resolver
from app.db import Database
from app.http.health import health_routes
from app.http.middleware import AccessLogMiddleware, BodyLimitMiddleware, ChatGPTHeaderNormalizer
from app.mcp.server import build_mcp_server
from app.settings import Settings


def create_app(settings: Settings, db: Database | None = None, resolver: Resolver = anonymous_resolver) -> ASGIApp:
    db = db or Database(settings.database_url, settings.db_pool_size)
    mcp = build_mcp_server(settings, db)
    mcp_http = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=settings.host_allow_list,
            allowed_origins=settings.origin_allow_list,
        ),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield
        db.dispose()

    async def index(_: Request) -> JSONResponse:
        return JSONResponse({"name": mcp.name, "mcp": settings.mcp_url})

    async def no_standalone_stream(_: Request) -> Response:
        # Stateless server: there is no session for a GET stream to belong to, and an idle
        # stream would pin a connection forever. The transport spec lets servers answer 405.
        return Response(status_code=405, headers={"allow": "POST"})

    app = Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            *health_routes(db),
            Route("/mcp", no_standalone_stream, methods=["GET"]),
            Mount("/", app=mcp_http),
        ],
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.db = db
    app.state.mcp = mcp
    wrapped: ASGIApp = PrincipalMiddleware(app, resolver)
    wrapped = ChatGPTHeaderNormalizer(wrapped)
    wrapped = BodyLimitMiddleware(wrapped, settings.max_body_bytes)
    return AccessLogMiddleware(wrapped)


def create_app_from_env() -> ASGIApp:
    """uvicorn factory (``--factory``): each worker reads the environment once."""
    from app.logging import configure_logging

    settings = Settings()
    configure_logging(settings.log_format, settings.log_level)
    return create_app(settings)
