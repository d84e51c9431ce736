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

from app.http.inflight import InFlight
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


def _answer(sock: socket.socket, wait: float = 2.0) -> tuple[bytes, bool]:
    """What the server answered within ``wait`` s (b"" for nothing yet), and whether it closed."""
    sock.settimeout(wait)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return data, False
    except ConnectionResetError:
        return data, True
    return data, True


def _status(answer: bytes) -> int | None:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else None


def _probes_answer(base: str) -> None:
    for path in ("/healthz", "/readyz"):
        assert httpx.get(base + path, timeout=5).status_code == 200


def _refused(sock: socket.socket) -> None:
    answer, closed = _answer(sock)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert _status(answer) == 503, answer[:200]
    assert b"retry-after: 2" in head.lower() and b"connection: close" in head.lower()
    assert json.loads(body)["error"]["message"] == "The server is busy; try again in 2 s."
    assert closed


def _taken_in(sock: socket.socket, length: int, sent: int = 10) -> None:
    """The request was admitted: the rest of its body is read and answered (not 503)."""
    assert _answer(sock, 0.2) == (b"", False)
    sock.sendall(b"}" * (length - sent))
    sock.settimeout(5)
    answer = b""
    while b"\r\n" not in answer and (chunk := sock.recv(65536)):
        answer += chunk
    assert _status(answer) not in (None, 503), answer[:200]


def _close(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def _admitted_within(base: str, length: int, seconds: float = 5.0, **kw: str) -> None:
    """A new request is taken in again once the server has seen the held ones go (polled)."""
    deadline = time.monotonic() + seconds
    while True:
        sock = _held(base, length, **kw)
        try:
            answer, _ = _answer(sock, 0.2)
            if _status(answer) != 503:
                _taken_in(sock, length)
                return
        finally:
            sock.close()
        assert time.monotonic() < deadline, "still refused"
        time.sleep(0.05)  # polling the server's count, not a test delay


def test_large_bodies_past_a_clients_share_of_the_bytes_are_refused_before_they_are_read(base):
    held = [_held(base, MAX_BODY) for _ in range(2)]  # half of 4 x MAX_BODY
    try:
        extra = _held(base, MAX_BODY, sent=0)
        began = time.monotonic()
        _refused(extra)
        assert time.monotonic() - began < 1.5
        _probes_answer(base)
        _taken_in(_held(base, MAX_BODY, address="198.51.100.9"), MAX_BODY)  # its own share
    finally:
        _close(held)
    _admitted_within(base, MAX_BODY)  # what the held ones reserved was given back


def test_the_bodies_of_every_client_together_are_capped(base):
    held = [_held(base, MAX_BODY, address=f"198.51.100.{1 + i // 2}") for i in range(4)]
    try:
        _refused(_held(base, MAX_BODY, address="198.51.100.30"))
        _probes_answer(base)
        # Small bodies (a tool call) are not reserved: the large ones held leave them alone.
        _taken_in(_held(base, 16 * 1024, address="198.51.100.30"), 16 * 1024)
        headers = {"x-forwarded-for": "198.51.100.31"}
        assert httpx.get(base + "/", headers=headers, timeout=5).status_code == 200
    finally:
        _close(held)


def test_many_small_requests_are_capped_by_count_per_client_and_in_all(base):
    held = [_held(base, 100) for _ in range(4)]
    try:
        _refused(_held(base, 100))
        held += [_held(base, 100, address=f"198.51.100.{20 + i}") for i in range(2)]
        _refused(_held(base, 100, address="198.51.100.22"))
        _probes_answer(base)
        # A request without a body is counted too.
        headers = {"x-forwarded-for": "198.51.100.23"}
        assert httpx.get(base + "/", headers=headers, timeout=5).status_code == 503
    finally:
        _close(held)
    _admitted_within(base, 100)


def test_a_chunked_body_reserves_the_largest_body(base):
    held = [_held(base, MAX_BODY)]
    try:
        sock = socket.create_connection(("127.0.0.1", _port(base)), timeout=5)
        sock.sendall(f"{HEAD}transfer-encoding: chunked\r\n\r\n".encode())
        held.append(sock)
        _refused(_held(base, MAX_BODY, sent=0))  # two largest bodies: this client's share
    finally:
        _close(held)


@pytest.mark.parametrize(("headers", "reserved"), [
    ([(b"content-length", b"100")], 0),  # small: counted, not reserved
    ([(b"content-length", b"40000")], 40000),
    ([(b"content-length", b"999999999")], MAX_BODY),  # refused 413 unread: at most the limit
    ([(b"content-length", b"+5")], MAX_BODY),
    ([(b"content-length", b"1"), (b"transfer-encoding", b"chunked")], MAX_BODY),  # h11 reads chunked
    ([(b"content-length", b"1"), (b"content-length", b"60000")], 60000),  # the worst one
    ([], 0),
])
def test_what_a_request_reserves_is_the_worst_its_headers_allow(headers, reserved):
    inflight = InFlight(lambda *a: None, total=1, per_client=1, body_bytes=4 * MAX_BODY,
                        max_body=MAX_BODY)
    assert inflight._body_of({"headers": headers}) == reserved
