"""The host emulator (development only): ``/dev/host`` plays ChatGPT's host for this server's
widgets, ``/dev/logs`` hands it the server's log events of one widget session.

Mounted by the composition root only outside production: the page is a developer tool, and
the log endpoint shows events of any widget session to whoever asks.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.logging import RecentEvents

PAGE = Path(str(files("app"))) / "static" / "devhost" / "index.html"
MAX_ID = 128


def devhost_routes(recent: RecentEvents | None, page: Path = PAGE) -> list[BaseRoute]:
    async def host(_: Request) -> Response:
        try:
            html = await anyio.to_thread.run_sync(lambda: page.read_text(encoding="utf-8"))
        except OSError:
            return JSONResponse({"error": "not_built", "error_description": "the host emulator is not built: run "
                                 "`npm --prefix widgets ci && npm --prefix widgets run build`"}, status_code=404)
        # no-store: a rebuilt emulator shows on the next reload.
        return HTMLResponse(html, headers={"cache-control": "no-store"})

    async def logs(request: Request) -> Response:
        sid = request.query_params.get("widget_session_id", "")
        after_raw = request.query_params.get("after", "0")
        if not sid or len(sid) > MAX_ID:
            return JSONResponse({"error": "invalid_request",
                                 "error_description": f"widget_session_id: 1 to {MAX_ID} characters"}, status_code=400)
        if not after_raw.isdigit() or len(after_raw) > 18:
            return JSONResponse({"error": "invalid_request", "error_description": "after: a sequence number"},
                                status_code=400)
        if recent is None:
            return JSONResponse({"error": "unavailable", "error_description": "this process keeps no recent events "
                                 "(started without the dev log buffer)"}, status_code=404)
        lines = recent.for_widget_session(sid, int(after_raw))
        return JSONResponse({"lines": lines, "last": lines[-1]["seq"] if lines else int(after_raw)},
                            headers={"cache-control": "no-store"})

    return [Route("/dev/host", host, methods=["GET"]), Route("/dev/logs", logs, methods=["GET"])]
