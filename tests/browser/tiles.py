"""A loopback map tile server for the browser tests: any ``/<z>/<x>/<y>.png`` is a 256 px PNG
(a checkerboard by tile, so a screenshot shows where tiles are), each request's path kept; with
``failing`` set every tile answers 503, as an unreachable tile host would look to Leaflet."""

from __future__ import annotations

import re
import struct
import sys
import zlib
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.serving import answering

TILE = re.compile(r"^/(\d{1,2})/(\d+)/(\d+)\.png$")


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, written by hand (zlib and a CRC per chunk): no imaging library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(row * height)) + chunk(b"IEND", b""))


LIGHT, DARK = png(256, 256, (232, 236, 228)), png(256, 256, (214, 222, 206))


class TileServer(ThreadingHTTPServer):
    daemon_threads = True
    failing = False

    def handle_error(self, request: object, client_address: object) -> None:
        """Leaflet drops the tiles a zoom moved past: a reset connection is a browser's right."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # pyright: ignore[reportArgumentType]

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), TileHandler)
        self.paths: list[str] = []

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def template(self) -> str:
        return f"{self.origin}/{{z}}/{{x}}/{{y}}.png"


class TileHandler(BaseHTTPRequestHandler):
    server: TileServer

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self.server.paths.append(self.path)
        match = TILE.match(self.path)
        if self.server.failing or match is None:
            self.send_response(503 if self.server.failing else 404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = LIGHT if (int(match[2]) + int(match[3])) % 2 else DARK
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


def serving_tiles() -> AbstractContextManager[TileServer]:
    return answering(TileServer())
