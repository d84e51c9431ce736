"""The speed-up package's HTTP protocol (app/tuning/protocol.py) as `serve` runs it by default: deadlines for a
request's head, its body and a client that reads nothing, and a bounded head on httptools. The stock server's
own bounds: tests/e2e/test_slow_clients.py."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from app.http.serving import MAX_HEAD_BYTES
from tests.e2e.server import LiveServer
from tests.slow_clients import (
    DEADLINES_ENV,
    HEADER_S,
    SEND_S,
    a_head_just_under_the_bound_is_served,
    a_trickled_body_is_answered_408_at_the_body_deadline,
    connect,
    header_lines,
    read_until_closed,
    requests_in_time_on_a_kept_alive_connection_are_served,
    trickle_until_closed,
)

# Deadlines and connections: the database behind the server never decides them.
pytestmark = [pytest.mark.tuning, pytest.mark.any_database]


@pytest.fixture(scope="module")
def deadlines(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("deadlines")
    server = LiveServer(database_url, tmp / "server.log",
                        extra_env={"APP_VAR_DIR": str(tmp / "var"), "APP_TUNING": "true",
                                   **DEADLINES_ENV}).start()
    yield server
    server.stop()


def test_forty_clients_trickling_headers_are_answered_408_and_cut_off_at_the_header_deadline(deadlines: LiveServer):
    socks = [connect(deadlines.port) for _ in range(40)]
    started = time.monotonic()
    try:
        got = trickle_until_closed(socks, header_lines(), every=0.5)
        elapsed = time.monotonic() - started
    finally:
        for sock in socks:
            sock.close()
    assert len(got) == 40
    assert all(answer.startswith(b"HTTP/1.1 408 Request Timeout") for answer in got.values()), set(got.values())
    assert HEADER_S - 0.5 < elapsed < HEADER_S + 2


def test_a_request_line_with_no_headers_after_it_is_cut_off(deadlines: LiveServer):
    with connect(deadlines.port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        started = time.monotonic()
        answer = sock.recv(65536)
        assert sock.recv(65536) == b""  # closed
        assert time.monotonic() - started < HEADER_S + 1
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout")


def test_a_request_head_over_the_bound_is_refused_at_once_and_the_connection_closed(deadlines: LiveServer):
    with connect(deadlines.port) as sock:
        started = time.monotonic()
        try:  # the server may close while the rest is still on its way
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: " + b"a" * (MAX_HEAD_BYTES + 1) + b"\r\n\r\n")
        except OSError:
            pass
        answer = read_until_closed(sock)
        elapsed = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert elapsed < HEADER_S  # refused as it came, not left to the deadline


def test_a_request_head_just_under_the_bound_is_served(deadlines: LiveServer):
    a_head_just_under_the_bound_is_served(deadlines.base_url)


def test_a_connection_that_never_sends_a_byte_is_closed_without_an_answer(deadlines: LiveServer):
    with connect(deadlines.port) as sock:
        started = time.monotonic()
        assert sock.recv(65536) == b""
        assert time.monotonic() - started < HEADER_S + 1


def test_a_body_trickled_a_byte_at_a_time_is_answered_408_at_the_body_deadline(deadlines: LiveServer):
    a_trickled_body_is_answered_408_at_the_body_deadline(deadlines)


def test_a_request_answered_before_its_body_was_in_gets_no_stray_408_afterwards(deadlines: LiveServer):
    with connect(deadlines.port) as sock:
        sock.sendall(b"POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n" + b"a" * 500)
        time.sleep(0.5)
        sock.sendall(b"a" * 500)  # in time: the answer (405) may already be on its way
        answered = b""
        started = time.monotonic()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answered += chunk
        closed_after = time.monotonic() - started
    assert answered.startswith(b"HTTP/1.1 405 ")
    assert b"HTTP/1.1 408" not in answered  # the body's tail is not a slow next request (a 408 answer)
    assert HEADER_S - 0.5 < closed_after < HEADER_S + 2  # idle afterwards: closed in silence at the deadline


def test_a_client_that_reads_none_of_the_answers_is_cut_off_at_the_send_deadline(deadlines: LiveServer):
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(SEND_S + 10)
    sock.connect(("127.0.0.1", deadlines.port))
    request = b"GET /dev/host HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"  # 250 KB each
    with sock:
        sock.sendall(request * 30)  # pipelined (within the bound), and none of the answers is read
        time.sleep(SEND_S + 2)
        received = read_until_closed(sock)
    assert 0 < received.count(b"HTTP/1.1 200 ") < 30
    events = deadlines.settled_log()
    assert [e["awaiting"] for e in events if e.get("event") == "http.slow_client"
            and e.get("awaiting") == "the client to read"] == ["the client to read"]
    # The requests cut off with it end as the client's leaving: no traceback, no 500.
    assert [e["event"] for e in events if e.get("level") in ("error", "critical")] == []


def test_requests_in_time_on_a_kept_alive_connection_are_served_past_the_deadlines(deadlines: LiveServer):
    requests_in_time_on_a_kept_alive_connection_are_served(deadlines.base_url)
