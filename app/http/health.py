"""Liveness and readiness probes."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from app.db import Database
from app.limits import Limits


def health_routes(db: Database, limits: Limits) -> list[Route]:
    async def healthz(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> JSONResponse:
        # Ready = database answers within the probe deadline AND its schema is at this code's head.
        state = await db.readiness()
        # Limits are reported, never a reason to be unready: while Redis is away each process counts its own
        # (sign-in refuses), and pulling every replica out of the load balancer would refuse everything.
        body = {"status": "ready" if state.ready else "unavailable", "database": state.database,
                "schema": state.schema, "limits": limits.where}
        if state.ready:
            return JSONResponse(body)
        if state.schema in ("behind", "not migrated"):
            body["hint"] = "run `python -m app migrate`"
        return JSONResponse(body, status_code=503, headers={"retry-after": "5"})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
