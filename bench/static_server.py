"""Bare static baseline: a plain mcp ``MCPServer`` answering ``get_zoo_animals`` from memory.

The same tool signature and the same result builder (``animals_result`` over the
feature's pydantic models) as the app, over the seed data read once at start-up: no
database, no middleware, no Apps extension, no logging. This is the SDK's own cost
per request, the figure a bare SDK server reaches.

Usage: ``python bench/static_server.py --port 8003 [--workers N]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field
from starlette.types import ASGIApp

from app.features.zoo.schemas import AnimalDetails, AnimalSummary, ZooAnimals
from app.features.zoo.tool import animals_result

ROOT = Path(__file__).resolve().parents[1]


def create() -> ASGIApp:
    records = sorted(json.loads((ROOT / "app/features/zoo/data/animals.json").read_text(encoding="utf-8")),
                     key=lambda a: a["name"])
    animals = [AnimalDetails(**a, likes=0) for a in records]
    mcp = MCPServer("static-bench", log_level="WARNING")

    @mcp.tool(name="get_zoo_animals", description="List animals living at the zoo, with their species.")
    async def get_zoo_animals(
        count: Annotated[int, Field(ge=1, le=20, description="How many animals to list (1-20)")] = 10,
    ) -> Annotated[CallToolResult, ZooAnimals]:
        chosen = animals[:count]
        summary = ZooAnimals(animals=[AnimalSummary(id=a.id, name=a.name, species=a.species) for a in chosen])
        return animals_result(summary, {a.id: a for a in chosen})

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
