"""An S3-protocol server for tests: moto in server mode on a loopback port, in this process.

``s3_server()`` also points the AWS credential chain at dummy keys (through the
environment, restored afterwards) and away from the developer's ~/.aws files and the
instance metadata service, so nothing leaves the machine.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import selectors
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from botocore.config import Config
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
_TEST_ENV = {
    "AWS_ACCESS_KEY_ID": "test",
    "AWS_SECRET_ACCESS_KEY": "test",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
_CLEARED = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_ROLE_ARN",
            "AWS_WEB_IDENTITY_TOKEN_FILE")


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str
    host: str
    port: int


@contextmanager
def aws_test_env() -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in (*_TEST_ENV, *_CLEARED, "NO_PROXY", "no_proxy")}
    for name in _CLEARED:
        os.environ.pop(name, None)
    os.environ.update(_TEST_ENV)
    # An HTTP proxy configured on the developer's machine must not see loopback test traffic.
    for name in ("NO_PROXY", "no_proxy"):
        os.environ[name] = ",".join(filter(None, ["127.0.0.1,localhost", saved[name]]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def s3_server() -> Iterator[S3Server]:
    # werkzeug logs every request at INFO; that would flood the app's captured logs.
    werkzeug_log = logging.getLogger("werkzeug")
    level = werkzeug_log.level
    werkzeug_log.setLevel(logging.WARNING)
    try:
        with aws_test_env():
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            try:
                host, port = server.get_host_and_port()
                yield S3Server(f"http://{host}:{port}", host, port)
            finally:
                server.stop()
    finally:
        werkzeug_log.setLevel(level)


def client(endpoint_url: str, **config: Any) -> Any:
    """A plain boto3 client for the test side (set-up and checks behind the code under test)."""
    return boto3.session.Session().client(
        "s3", region_name=REGION, endpoint_url=endpoint_url,
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, **config))


@functools.lru_cache
def _admin(endpoint_url: str) -> Any:
    # Building a boto3 client takes a noticeable fraction of a second; tests make a bucket each.
    return client(endpoint_url)


def make_bucket(endpoint_url: str, name: str) -> None:
    _admin(endpoint_url).create_bucket(Bucket=name)


# ---- a proxy that cuts connections, for fault tests ---------------------------------------------------------

def _reset(sock: socket.socket) -> None:
    # Linger 0: close() sends a TCP RST, as a crashed server or a dropped connection would.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class CuttingProxy:
    """TCP proxy on loopback in front of `target_port`.

    `budget`: once that many request bytes went upstream, every connection is reset, and so is every later one
    (the server died). `kill`: a connection whose request bytes match the pattern is reset (one request fails).
    """

    def __init__(self, target_port: int, *, budget: int | None = None, kill: bytes | None = None) -> None:
        self.target_port, self.budget, self.kill = target_port, budget, re.compile(kill) if kill else None
        self.forwarded = 0
        self.dead = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> CuttingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, None)
        pairs: dict[socket.socket, tuple[socket.socket, bool]] = {}
        tails: dict[socket.socket, bytes] = {}

        def drop(sock: socket.socket, reset: bool) -> None:
            peer, _ = pairs.pop(sock)
            pairs.pop(peer, None)
            for s in (sock, peer):
                selector.unregister(s)
                tails.pop(s, None)
                _reset(s) if reset else s.close()

        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.05):
                sock = key.fileobj
                if sock is self._listener:
                    downstream, _ = self._listener.accept()
                    if self.dead:
                        _reset(downstream)
                        continue
                    upstream = socket.create_connection(("127.0.0.1", self.target_port))
                    pairs[downstream], pairs[upstream] = (upstream, True), (downstream, False)
                    for s in (downstream, upstream):
                        selector.register(s, selectors.EVENT_READ, None)
                    continue
                if sock not in pairs:
                    continue
                peer, to_server = pairs[sock]
                try:
                    chunk = sock.recv(256 * 1024)
                except OSError:
                    chunk = b""
                if not chunk:
                    drop(sock, reset=False)
                    continue
                if to_server:
                    window = tails.get(sock, b"") + chunk
                    tails[sock] = window[-128:]
                    if self.kill and self.kill.search(window):
                        drop(sock, reset=True)
                        continue
                    self.forwarded += len(chunk)
                    if self.budget is not None and self.forwarded > self.budget:
                        self.dead = True
                        for s in [s for s, (_, from_client) in pairs.items() if from_client]:
                            drop(s, reset=True)
                        continue
                try:
                    peer.sendall(chunk)
                except OSError:
                    drop(sock, reset=True)
        for s in list(pairs):
            if s in pairs:
                drop(s, reset=True)
        selector.close()
        self._listener.close()
