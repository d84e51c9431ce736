"""The stock server (APP_TUNING=false: uvicorn's own h11 protocol, without the speed-up package) against clients
that are slow or large on purpose: what bounds them there comes from uvicorn's options and the app's own body
deadline (app/http/deadlines.py). The head deadline and the cut for a client that reads nothing are the front's
on this path (docs/lifecycle.md); the speed-up package's protocol adds them in-process
(tests/e2e/test_tuned_protocol.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from app.http.serving import MAX_HEAD_BYTES
from tests.e2e.server import LiveServer
from tests.slow_clients import (
    BODY_S,
    DEADLINES_ENV,
    a_head_just_under_the_bound_is_served,
    a_trickled_body_is_answered_408_at_the_body_deadline,
    connect,
    read_until_closed,
    requests_in_time_on_a_kept_alive_connection_are_served,
)

# Deadlines and connections: the database behind the server never decides them.
pytestmark = pytest.mark.any_database


@pytest.fixture(scope="module")
def stock(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("stock")
    server = LiveServer(database_url, tmp / "server.log",
                        extra_env={"APP_VAR_DIR": str(tmp / "var"), "APP_TUNING": "false", **DEADLINES_ENV}).start()
    yield server
    server.stop()


def _send_head(port: int, head: bytes, split_at: int) -> tuple[bytes, float]:
    """The head in two writes 0.2 s apart (the first ``split_at`` bytes, then the rest and its end); what the
    server answered until it closed, and how long that took."""
    with connect(port) as sock:
        started = time.monotonic()
        try:  # the server may close while the rest is still on its way
            sock.sendall(head[:split_at])
            time.sleep(0.2)
            sock.sendall(head[split_at:] + b"\r\n\r\n")
        except OSError:
            pass
        return read_until_closed(sock), time.monotonic() - started


def test_a_request_head_still_unfinished_past_the_bound_is_refused_by_h11(stock: LiveServer):
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (MAX_HEAD_BYTES + 1024)
    answer, elapsed = _send_head(stock.port, head, MAX_HEAD_BYTES + 512)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert elapsed < BODY_S  # refused as it came


def test_a_request_head_past_the_bound_that_arrives_whole_is_refused_by_the_app(stock: LiveServer):
    head = b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (MAX_HEAD_BYTES + 1024)
    answer, _ = _send_head(stock.port, head, MAX_HEAD_BYTES // 2)  # never unfinished past the bound
    assert answer.startswith(b"HTTP/1.1 431 ") and b"connection: close" in answer.lower()


def test_a_request_head_just_under_the_bound_is_served(stock: LiveServer):
    a_head_just_under_the_bound_is_served(stock.base_url)


def test_a_body_trickled_a_byte_at_a_time_is_answered_408_at_the_body_deadline(stock: LiveServer):
    events = a_trickled_body_is_answered_408_at_the_body_deadline(stock)
    assert [(e["awaiting"], e["peer"]) for e in events if e.get("event") == "http.slow_client"] == [
        ("body", "127.0.0.1")]


def test_a_whole_body_sent_in_time_in_pieces_is_served(stock: LiveServer):
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    with connect(stock.port) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     b"accept: application/json\r\nmcp-protocol-version: 2025-06-18\r\nconnection: close\r\n"
                     b"content-length: " + str(len(body)).encode() + b"\r\n\r\n")
        for piece in (body[:10], body[10:30], body[30:]):
            time.sleep(BODY_S / 5)  # three fifths of the deadline in all
            sock.sendall(piece)
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b'{"jsonrpc":"2.0","id":1,"result":{}}')


def test_requests_in_time_on_a_kept_alive_connection_are_served(stock: LiveServer):
    requests_in_time_on_a_kept_alive_connection_are_served(stock.base_url)
