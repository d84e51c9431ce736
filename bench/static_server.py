"""Bare static baseline: a plain mcp ``MCPServer`` answering ``get_zoo_animals`` from memory.

The same tool signature and the same answer as the app, from the baselines' own fixture data and models
(``bench/baseline.py``) read once at start-up: no database, no middleware, no Apps extension, no logging.
This is the SDK's own cost per request, the figure a bare SDK server reaches.

Usage: ``python bench/static_server.py --port 8003 [--workers N]``
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated

import uvicorn
from baseline import AnimalDetails, ZooAnimals, animals_result, fixture_animals
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field
from starlette.types import ASGIApp

ROOT = Path(__file__).resolve().parents[1]


def create() -> ASGIApp:
    animals = [AnimalDetails(**a) for a in fixture_animals()]
    mcp = MCPServer("static-bench", log_level="WARNING")

    @mcp.tool(name="get_zoo_animals", description="List animals living at the zoo, with their species.")
    async def get_zoo_animals(
        count: Annotated[int, Field(ge=1, le=20, description="How many animals to list (1-20)")] = 10,
    ) -> Annotated[CallToolResult, ZooAnimals]:
        return animals_result(animals, count)

    return mcp.streamable_http_app(stateless_http=True, json_response=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    uvicorn.run("static_server:create", factory=True, app_dir=str(ROOT / "bench"), host="127.0.0.1",
                port=args.port, workers=args.workers, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
