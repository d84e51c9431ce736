"""The host emulator (development only): ``/dev/host`` plays ChatGPT's host for this server's
widgets, ``/dev/logs`` hands it the server's log events of one widget session, and
``/dev/files`` keeps the files of its fake library (what ChatGPT's file storage is to a real
conversation), so a widget's ``uploadFile`` gives the server a URL it can fetch.

Mounted by the composition root only outside production: the page is a developer tool, the log
endpoint shows events of any widget session to whoever asks, and the file store is this
process's memory (bounded, gone on restart).
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import anyio.to_thread
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from app.http.templates import templates
from app.logging import RecentEvents
from app.storage.base import content_disposition, served_content_type

PAGE = Path(str(files("app"))) / "static" / "devhost" / "index.html"
# The emulator's tab icon (a browser asks for one; a 404 in its console is noise to a forker).
FAVICON = Path(__file__).with_name("favicon.svg")
MAX_ID = 128


@dataclass
class DevFiles:
    """The emulator's file library: the newest files, at most ``max_files`` and ``max_bytes`` in all
    (kept in the memory of a development process)."""

    max_bytes: int = 50 * 1024 * 1024
    max_files: int = 32
    _files: OrderedDict[str, tuple[bytes, str, str]] = field(default_factory=OrderedDict)

    def add(self, body: bytes, content_type: str, name: str) -> str:
        file_id = f"devfile_{secrets.token_hex(12)}"
        self._files[file_id] = (body, content_type, name)
        while (len(self._files) > self.max_files
               or sum(len(b) for b, _, _ in self._files.values()) > self.max_bytes):
            self._files.popitem(last=False)
        return file_id

    def get(self, file_id: str) -> tuple[bytes, str, str] | None:
        return self._files.get(file_id)


def devhost_routes(recent: RecentEvents | None, library: DevFiles,
                   page: Path = PAGE) -> list[BaseRoute]:
    pages = templates("app.http")

    async def host(request: Request) -> Response:
        try:
            html = await anyio.to_thread.run_sync(lambda: page.read_text(encoding="utf-8"))
        except OSError:
            return JSONResponse({"error": "not_built",
                                 "error_description": "the host emulator is not built: run "
                                 "`npm --prefix widgets ci && npm --prefix widgets run build`"},
                                status_code=404)
        # no-store: a rebuilt emulator shows on the next reload. Markup: the build's page, not a
        # value of a request's.
        return pages.TemplateResponse(request, "devhost.html", {"build": Markup(html)},
                                      headers={"cache-control": "no-store"})

    async def logs(request: Request) -> Response:
        sid = request.query_params.get("widget_session_id", "")
        after_raw = request.query_params.get("after", "0")
        if not sid or len(sid) > MAX_ID:
            return JSONResponse({"error": "invalid_request",
                                 "error_description": f"widget_session_id: 1 to {MAX_ID} "
                                 "characters"},
                                status_code=400)
        if not (after_raw.isascii() and after_raw.isdigit()) or len(after_raw) > 18:
            return JSONResponse({"error": "invalid_request",
                                 "error_description": "after: a sequence number"},
                                status_code=400)
        if recent is None:
            return JSONResponse({"error": "unavailable",
                                 "error_description": "this process keeps no recent events "
                                 "(started without the dev log buffer)"}, status_code=404)
        lines = recent.for_widget_session(sid, int(after_raw))
        return JSONResponse({"lines": lines, "last": lines[-1]["seq"] if lines else int(after_raw)},
                            headers={"cache-control": "no-store"})

    async def upload(request: Request) -> Response:
        declared = request.headers.get("content-length", "")
        if not (declared.isascii() and declared.isdigit()):
            return JSONResponse({"error": "invalid_request",
                                 "error_description": "send the file with a Content-Length"},
                                status_code=411)
        if int(declared) > library.max_bytes:
            return JSONResponse({"error": "invalid_request",
                                 "error_description": f"the file is over "
                                 f"{library.max_bytes} bytes (the dev host's library)"},
                                status_code=413)
        body = await request.body()
        if len(body) != int(declared):
            return JSONResponse({"error": "invalid_request",
                                 "error_description": "body shorter than declared"},
                                status_code=400)
        name = request.headers.get("x-file-name", "file")[:200]
        content_type = request.headers.get("content-type", "application/octet-stream")[:200]
        file_id = library.add(body, content_type, name)
        return JSONResponse({"id": file_id,
                             "url": str(request.url_for("dev_file", file_id=file_id))},
                            status_code=201)

    async def download(request: Request) -> Response:
        found = library.get(request.path_params["file_id"])
        if found is None:
            return JSONResponse({"error": "not_found"}, status_code=404)
        body, content_type, name = found
        return Response(body, media_type=served_content_type(content_type),
                        headers={"content-disposition": content_disposition(name),
                                 "cache-control": "no-store"})

    icon = FAVICON.read_bytes()  # read once, when the routes are made

    async def favicon(request: Request) -> Response:
        return Response(icon, media_type="image/svg+xml",
                        headers={"cache-control": "public, max-age=86400"})

    return [Route("/dev/host", host, methods=["GET"]), Route("/dev/logs", logs, methods=["GET"]),
            Route("/dev/host/favicon.svg", favicon, methods=["GET"]),
            Route("/dev/files", upload, methods=["POST"]),
            Route("/dev/files/{file_id}", download, methods=["GET"], name="dev_file")]
