"""A TCP proxy on loopback that a test can cut: between the server under test and the shared Redis, so an
outage is made without stopping Redis (CI's Redis serves other runs too).

Modes: ``forward`` (bytes flow both ways), ``refuse`` (every connection is reset at once: a Redis that is
down), ``blackhole`` (connections are accepted and never answered: a Redis that hangs). Switching mode also
drops the connections already open, as a failed Redis would.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, path: str = "") -> None:
        self.target = (target_host, target_port)
        self.path = path
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.mode = "forward"
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._running = True
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}{self.path}"

    def set_mode(self, mode: str) -> None:
        assert mode in ("forward", "refuse", "blackhole")
        with self._lock:
            self.mode = mode
            for sock in self._open:
                _reset(sock)
            self._open.clear()

    def close(self) -> None:
        self._running = False
        self.set_mode("refuse")
        self.listener.close()

    def _accept(self) -> None:
        while self._running:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                mode = self.mode
                if mode == "refuse":
                    _reset(client)
                    continue
                self._open.append(client)
            if mode == "forward":
                try:
                    upstream = socket.create_connection(self.target, timeout=5)
                except OSError:
                    _reset(client)
                    continue
                with self._lock:
                    self._open.append(upstream)
                for a, b in ((client, upstream), (upstream, client)):
                    threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    for sock in (source, sink):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _reset(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST, not FIN
    with contextlib.suppress(OSError):
        sock.close()


@contextlib.contextmanager
def proxy_to(url: str) -> Iterator[TcpProxy]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 6379, parts.path)
    try:
        yield proxy
    finally:
        proxy.close()
