"""Requests in flight, capped per client address and in all, by count and by body bytes, over real
HTTP: past a cap the answer is an immediate 503 with Retry-After and Connection: close, before the
body is read; health probes are never refused; what a request held is given back when it ends.

The attack this guards against (issue 38): 100 connections declaring a 4 MiB body and sending all
but its last byte took one worker from 139 MiB to 1.6 GiB; nothing refused any of them."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from app.main import create_app
from app.settings import load_settings
from tests.serving import serving

MAX_BODY = 64 * 1024
HEAD = (
    "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n"
)


@pytest.fixture(scope="module")
def base(database_url: str) -> Iterator[str]:
    def build(base_url: str):
        settings = load_settings(
            database_url=database_url,
            base_url=base_url,
            log_format="json",
            max_body_bytes=MAX_BODY,
            max_body_bytes_in_flight=4 * MAX_BODY,
            max_requests_in_flight=6,
            max_requests_in_flight_per_client=4,
            _env_file=None,
        )
        return create_app(settings, features=[])

    with serving(build) as url:
        yield url


def _port(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def _held(base: str, length: int, *, address: str | None = None, sent: int = 10) -> socket.socket:
    """A request declaring ``length`` body bytes, of which ``sent`` are sent: it stays in flight."""
    sock = socket.create_connection(("127.0.0.1", _port(base)), timeout=5)
    forwarded = f"x-forwarded-for: {address}\r\n" if address else ""
    sock.sendall(f"{HEAD}{forwarded}content-length: {length}\r\n\r\n".encode() + b"{" * sent)
    return sock


def _answer(sock: socket.socket, wait: float = 2.0) -> bytes:
    """What the server answered within ``wait`` s (b"" for nothing yet)."""
    sock.settimeout(wait)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        pass
    return data


def _status(answer: bytes) -> int | None:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


def _probes_answer(base: str) -> None:
    for path in ("/healthz", "/readyz"):
        assert httpx.get(base + path, timeout=5).status_code == 200


def _refused(sock: socket.socket, *, who: str) -> None:
    answer = _answer(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert _status(answer) == 503, answer[:200]
    assert b"retry-after: 2" in head.lower() and b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert error["message"] == f"Too many requests in flight {who}; retry in 2 s."
    assert answer.endswith(body)  # and the connection was closed (recv returned b"")


def _close(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()
    time.sleep(0.3)  # the server sees the disconnects (each held request ends)


def test_large_bodies_past_a_clients_share_of_the_bytes_are_refused_before_they_are_read(base):
    held = [_held(base, MAX_BODY) for _ in range(2)]  # half of 4 x MAX_BODY
    try:
        assert [_answer(s, 0.3) for s in held] == [b"", b""]  # taken in, waiting for the rest
        extra = _held(base, MAX_BODY, sent=0)
        began = time.monotonic()
        _refused(extra, who="from your address")
        assert time.monotonic() - began < 1.5
        _probes_answer(base)
        other = _held(base, MAX_BODY, address="198.51.100.9")  # another client: its own share
        assert _answer(other, 0.3) == b""
        held.append(other)
    finally:
        _close(held)
    again = _held(base, MAX_BODY)  # given back: taken in again
    try:
        assert _answer(again, 0.3) == b""
    finally:
        _close([again])


def test_the_bodies_of_every_client_together_are_capped(base):
    held = [_held(base, MAX_BODY, address=f"198.51.100.{1 + i // 2}") for i in range(4)]
    try:
        _refused(_held(base, MAX_BODY, address="198.51.100.30"), who="in all")
        _probes_answer(base)
        # Small bodies (a tool call) are not reserved: the large ones held leave them alone.
        small = _held(base, 16 * 1024, address="198.51.100.30")
        held.append(small)
        assert _answer(small, 0.3) == b""
        # No body, nothing to reserve: answered.
        assert (
            httpx.get(
                base + "/", headers={"x-forwarded-for": "198.51.100.31"}, timeout=5
            ).status_code
            == 200
        )
    finally:
        _close(held)


def test_many_small_requests_are_capped_by_count_per_client_and_in_all(base):
    held = [_held(base, 100) for _ in range(4)]
    try:
        _refused(_held(base, 100), who="from your address")
        held += [
            _held(base, 100, address="198.51.100.20"),
            _held(base, 100, address="198.51.100.21"),
        ]
        _refused(_held(base, 100, address="198.51.100.22"), who="in all")
        _probes_answer(base)
        # A request without a body is counted too.
        assert (
            httpx.get(
                base + "/", headers={"x-forwarded-for": "198.51.100.23"}, timeout=5
            ).status_code
            == 503
        )
    finally:
        _close(held)
    assert httpx.get(base + "/", timeout=5).status_code == 200


def test_a_chunked_body_reserves_the_largest_body(base):
    held = [_held(base, MAX_BODY)]
    try:
        sock = socket.create_connection(("127.0.0.1", _port(base)), timeout=5)
        sock.sendall(f"{HEAD}transfer-encoding: chunked\r\n\r\n".encode())
        held.append(sock)
        assert _answer(sock, 0.3) == b""  # two largest bodies: this client's share, taken in
        _refused(_held(base, MAX_BODY, sent=0), who="from your address")
    finally:
        _close(held)
