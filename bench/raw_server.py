"""Raw ceiling: one Starlette POST /mcp endpoint that answers ``get_zoo_animals`` with plain dicts.

Per request it parses the JSON-RPC body, checks the method and tool name, takes the first
``count`` animals (the seed data, sorted by name, read once at start-up) and builds the
same result the app returns (text content, structuredContent, the widget's
``allAnimalsById``) as dicts, serialised by ``JSONResponse``. No MCP, no database, no
validation beyond the shape: the cost of uvicorn + Starlette + JSON in and out.

On the 2026-07-28 path (``mcp-protocol-version: 2026-07-28``) the result carries the
fields that version adds (``resultType``, the server-info stamp).

Usage: ``python bench/raw_server.py --port 8002 [--workers N]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import uvicorn
from baseline import fixture_animals
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

HERE = Path(__file__).resolve().parent
ANIMALS = fixture_animals()  # the baselines' own copy of the zoo's records
MODERN = "2026-07-28"
SERVER_INFO = {"name": "raw-bench", "version": "1"}


def zoo_result(count: int, modern: bool) -> dict:
    chosen = ANIMALS[:count]
    names = ", ".join(f"{a['name']} the {a['species'].lower()}" for a in chosen)
    result: dict = {
        "content": [{"type": "text", "text": f"{len(chosen)} animals at the zoo: {names}."}],
        "structuredContent": {"animals": [{"id": a["id"], "name": a["name"], "species": a["species"]}
                                          for a in chosen]},
        "_meta": {"allAnimalsById": {a["id"]: dict(a) for a in chosen}},
        "isError": False,
    }
    if modern:
        result["resultType"] = "complete"
        result["_meta"]["io.modelcontextprotocol/serverInfo"] = SERVER_INFO
    return result


async def mcp_endpoint(request: Request) -> JSONResponse:
    try:
        message = json.loads(await request.body())
        params = message["params"]
        if message["method"] != "tools/call" or params["name"] != "get_zoo_animals":
            raise KeyError(message["method"])
        count = int(params.get("arguments", {}).get("count", 10))
    except (ValueError, KeyError, TypeError):
        return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "unknown request"}},
                            status_code=400)
    modern = request.headers.get("mcp-protocol-version") == MODERN
    return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "result": zoo_result(count, modern)})


app = Starlette(routes=[Route("/mcp", mcp_endpoint, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    uvicorn.run("raw_server:app", app_dir=str(HERE), host="127.0.0.1", port=args.port, workers=args.workers,
                log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
