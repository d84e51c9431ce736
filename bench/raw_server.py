"""Raw ceiling: one Starlette POST /mcp endpoint replaying pre-recorded responses.

It reads and JSON-parses the request body (so it does comparable request work),
looks up the tool name in ``params.name`` and returns the bytes the real app
produced for that tool, with ``content-type: application/json``. No MCP, no
database: this is the cost of uvicorn + Starlette + JSON parsing alone.

The recordings come from the JSON file named by ``BENCH_RAW_RESPONSES``, read
once at import: ``{"<mcp-protocol-version>": {"<tool name>": "<body text>"}}``.
The ``mcp-protocol-version`` request header only picks which recording set to
replay (legacy or modern wire format); nothing else about the protocol is checked.

Usage: ``BENCH_RAW_RESPONSES=/tmp/rec.json python bench/raw_server.py --port 8002``
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def _load(path: Path) -> dict[str, dict[str, bytes]]:
    recorded = json.loads(path.read_text(encoding="utf-8"))
    return {version: {tool: text.encode() for tool, text in tools.items()} for version, tools in recorded.items()}


RECORDINGS = _load(Path(os.environ["BENCH_RAW_RESPONSES"]))


async def mcp_endpoint(request: Request) -> Response:
    try:
        message = json.loads(await request.body())
        body = RECORDINGS[request.headers.get("mcp-protocol-version", "")][message["params"]["name"]]
    except (ValueError, KeyError, TypeError):
        return JSONResponse({"error": "unknown request"}, status_code=400)
    return Response(body, media_type="application/json")


app = Starlette(routes=[Route("/mcp", mcp_endpoint, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
