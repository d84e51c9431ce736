"""Bare baseline: a plain mcp 2.3 ``MCPServer`` with the app's two benchmarked tools.

Same service functions, same ``Database.read`` thread hop and the same
result builders (``animals_result``, ``search_result``) as the app, but none of the app's wrapping:
no Apps extension, no MCP middleware, no ASGI middleware, no transport security
settings, no structlog. Served by uvicorn as the top-level ASGI app, so the
Starlette app returned by ``streamable_http_app`` runs its own lifespan, which
starts the stateless session manager.

Usage: ``APP_DATABASE_URL=sqlite:////tmp/x.db python bench/bare_server.py --port 8001 [--workers N]``
(the database must already be migrated and seeded).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field
from starlette.types import ASGIApp

from app.db import Database
from app.features.search import service as search_service
from app.features.search.schemas import SearchResults
from app.features.search.tool import search_result
from app.features.zoo import service as zoo_service
from app.features.zoo.schemas import ZooAnimals
from app.features.zoo.tool import animals_result

ROOT = Path(__file__).resolve().parents[1]


def build(db: Database) -> MCPServer:
    mcp = MCPServer("bare-bench", log_level="WARNING")

    @mcp.tool(name="get_zoo_animals", description="List animals living at the zoo, with their species.")
    async def get_zoo_animals(
        count: Annotated[int, Field(ge=1, le=20, description="How many animals to list (1-20)")] = 10,
    ) -> Annotated[CallToolResult, ZooAnimals]:
        return animals_result(*await db.read(lambda uow: zoo_service.list_animals(uow, count)))

    @mcp.tool(name="search", description="Full-text search of the Python standard library documentation.")
    async def search(
        q: Annotated[str, Field(min_length=1, max_length=500, description="What to search for")],
    ) -> Annotated[CallToolResult, SearchResults]:
        return search_result(q, await db.read(lambda uow: search_service.search(uow, q)))

    return mcp


def create() -> ASGIApp:
    db = Database(os.environ["APP_DATABASE_URL"])
    return build(db).streamable_http_app(stateless_http=True, json_response=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    uvicorn.run("bare_server:create", factory=True, app_dir=str(ROOT / "bench"), host="127.0.0.1", port=args.port,
                workers=args.workers, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
