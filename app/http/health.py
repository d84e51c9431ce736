"""Liveness and readiness probes."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app.db import Database


def health_routes(db: Database) -> list[Route]:
    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> JSONResponse:
        if await db.ping():
            return JSONResponse({"status": "ready", "database": "ok"})
        return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503,
                            headers={"retry-after": "5"})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
