"""Bare baseline: a plain mcp 2.3 ``MCPServer`` with the app's two benchmarked tools.

The same database (migrated and seeded by the app), the same ``Database.read`` thread hop and the same
answers as the app, but none of the app's wrapping:
no Apps extension, no MCP middleware, no ASGI middleware, no transport security
settings, no structlog. Served by uvicorn as the top-level ASGI app, so the
Starlette app returned by ``streamable_http_app`` runs its own lifespan, which
starts the stateless session manager.

The zoo is read with a query and models of the baseline's own (``bench/baseline.py``), so it imports no demo;
search, when this tree has it, calls the search feature's own service (its ranking is what is compared).

Usage: ``APP_DATABASE_URL=sqlite:////tmp/x.db python bench/bare_server.py --port 8001 [--workers N]``
(the database must already be migrated and seeded).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from pathlib import Path
from typing import Annotated

import uvicorn
from baseline import AnimalDetails, ZooAnimals, animals_result
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field
from sqlalchemy import Column, Float, Integer, MetaData, String, Table, select
from sqlalchemy.orm import Session
from starlette.types import ASGIApp

from app.db import Database

# Search is compared on the feature's own service (its ranking is the work measured), when this tree has it.
# Imported at module level: the SDK evaluates the tool's annotations in this module's namespace.
# A fork that removed it may keep its folder of compiled files (what `git rm -r` leaves): a
# namespace package, without an origin. Imported from the package alone: linters sort these alike
# whether that folder is there or not.
SEARCH = importlib.util.find_spec("app.features.search")
HAS_SEARCH = SEARCH is not None and SEARCH.origin is not None
if HAS_SEARCH:
    from app.features.search import schemas as search_schemas
    from app.features.search import service as search_service
    from app.features.search import tool as search_tool

ROOT = Path(__file__).resolve().parents[1]
ANIMALS = Table("zoo_animals", MetaData(), *(Column(name, kind) for name, kind in (
    ("id", String), ("name", String), ("species", String), ("scientific_name", String), ("habitat", String),
    ("diet", String), ("conservation_status", String), ("lifespan_years", Integer), ("weight_kg", Float),
    ("fun_fact", String), ("enclosure", String), ("likes", Integer))))


class AnimalRows:
    """The baseline's own repository: the first animals by name, as the app lists them."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def first(self, count: int) -> list[AnimalDetails]:
        rows = self.session.execute(select(ANIMALS).order_by(ANIMALS.c.name, ANIMALS.c.id).limit(count))
        return [AnimalDetails.model_validate(dict(row._mapping)) for row in rows]


def build(db: Database) -> MCPServer:
    mcp = MCPServer("bare-bench", log_level="WARNING")

    @mcp.tool(name="get_zoo_animals", description="List animals living at the zoo, with their species.")
    async def get_zoo_animals(
        count: Annotated[int, Field(ge=1, le=20, description="How many animals to list (1-20)")] = 10,
    ) -> Annotated[CallToolResult, ZooAnimals]:
        return animals_result(await db.read(lambda uow: uow.repository(AnimalRows).first(count)), count)

    if HAS_SEARCH:
        @mcp.tool(name="search", description="Full-text search of the Python standard library documentation.")
        async def search(
            q: Annotated[str, Field(min_length=1, max_length=500, description="What to search for")],
        ) -> Annotated[CallToolResult, search_schemas.SearchResults]:
            found = await db.read(lambda uow: search_service.search(uow, q))
            return search_tool.search_result(q, found)

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
