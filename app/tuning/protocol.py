"""A tuned HTTP protocol for ``serve``: uvicorn's httptools protocol (llhttp, in C: about a tenth of a
millisecond less per request than h11 here, ``docs/performance.md``), with the deadlines stock uvicorn
does not have.

uvicorn reads a request for as long as the client keeps sending (a header line every few seconds, a
body at a byte a second) and writes a response for as long as the client takes to read it: either
holds a connection, and in the app a task, indefinitely. This protocol adds three deadlines: a
request's headers within ``header_timeout`` seconds of the connection (or of the previous response);
its body within ``body_timeout`` seconds of its headers, not counting time the server itself spends
not reading it; and a client that takes in nothing of a response for ``send_timeout`` seconds is cut
off. A client that misses a read deadline gets ``408 Request Timeout`` (nothing, if it never sent a
byte) and the connection is closed, which the app sees as the client's disconnect. It says so in each
request's ASGI extensions, and the app's own bounds (``app.http.bounds``, for any server) stand
aside.

llhttp bounds nothing in the request head, so the protocol does: a request line and headers past
``MAX_HEAD_BYTES`` (h11's own default) are answered 400 and the connection is closed. A header that
never ends reaches no parser callback: it is counted by the reads that bring it, after the one its
request began in (up to 256 KiB), so it is cut at that read plus 16 KiB. Also refused: more than one
Host header, or none in an HTTP/1.1 request, which h11 refused and llhttp serves, and a request that asks
to switch protocols (``Upgrade`` with ``Connection: upgrade``, ``CONNECT``), whose body llhttp would hand
to a protocol uvicorn does not run.

This module subclasses uvicorn's protocol and reads its state (the request cycle, flow control, the
parser): it lives in the speed-up package, deletable; its tests (marked ``tuning``:
tests/integration/test_serving.py, tests/e2e/test_tuned_protocol.py) fail when an uvicorn release moves
what it relies on.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from dataclasses import dataclass
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.http.bounds import SERVER_BOUNDS
from app.http.serving import MAX_HEAD_BYTES, ProtocolFactory

log = structlog.get_logger("app.http")

_TIMEOUT_BODY = b"The request took too long to arrive.\n"
REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"connection: close\r\ncontent-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n\r\n"
                   + _TIMEOUT_BODY)
LINGER_S = 2.0  # after a 408: how long what the client still sends is read and dropped
PIPELINE_DEPTH = 32  # requests parsed and waiting behind the one being answered, per connection


class BadHead(Exception):
    """Raised from the parser's callbacks: uvicorn answers a parser error 400 and closes the connection."""


@dataclass(frozen=True)
class Deadlines:
    """Seconds for a request's head, its body, and a client taking in a response (APP_HTTP_*_TIMEOUT)."""

    header: float
    body: float
    send: float


@dataclass(frozen=True)
class Connections:
    """How many connections a worker keeps open, and how long one is kept alive
    (APP_HTTP_MAX_CONNECTIONS, APP_HTTP_CONNECTION_REQUESTS, APP_HTTP_CONNECTION_LIFETIME)."""

    most: int = 1000
    requests: int = 1000  # then its last response says ``Connection: close``
    lifetime: float = 600.0  # seconds from connecting; the next response says Connection: close


_BUSY_BODY = b"Too many connections are open; retry in 2 s.\n"
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"retry-after: 2\r\nconnection: close\r\ncontent-length: "
        + str(len(_BUSY_BODY)).encode() + b"\r\n\r\n" + _BUSY_BODY)


def deadline_protocol(deadlines: Deadlines,
                      connections: Connections = Connections()) -> ProtocolFactory:
    """What uvicorn's ``http`` option takes: the protocol, with these deadlines and bounds (a
    partial pickles, so ``--workers N`` hands it to each worker)."""
    return functools.partial(DeadlineProtocol, deadlines=deadlines, connections=connections)


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with deadlines for a request's headers, its body, and the client taking
    in the response, and a bound on the request head."""

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None, *, deadlines: Deadlines,
                 connections: Connections = Connections()) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._bounds = connections
        self._opened = self._idle_since = 0.0
        self._served = 0  # requests begun on this connection
        self._header_timeout = deadlines.header
        self._body_timeout = deadlines.body
        self._send_timeout = deadlines.send
        self._deadline: asyncio.TimerHandle | None = None
        self._awaiting = ""  # "headers" | "body" while a deadline runs
        self._received = False  # a byte of the awaited request has arrived
        self._request: object | None = None  # the request cycle whose headers were last seen
        self._lingering = False  # answered 408: what still arrives is dropped until the connection closes
        self._send_deadline: asyncio.TimerHandle | None = None
        self._running: Any = None
        self._message_done = True  # the parser has seen the whole of the last request (its body included)
        # The request head: what the parser has handed over (a URL piece, a whole header), and what arrived while
        # it was still open, after the read it began in (a header that never ends reaches no callback).
        self._head_open = self._head_began_now = False
        self._head_bytes = self._head_pending = self._hosts = 0

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self._opened = self._idle_since = self.loop.time()
        if len(self.connections) > self._bounds.most and not self._make_room():
            log.info("http.too_many_connections", peer=self.client[0] if self.client else None)
            self.transport.write(BUSY)
            self._close()
            return
        self._expect("headers")

    def _make_room(self) -> bool:
        """Past the connection cap: close the connection idle longest (kept alive between requests,
        or still sending a head), as nginx reuses its idle keep-alive connections. False: none is
        idle, every one is being answered."""
        idle = [c for c in self.connections
                if isinstance(c, DeadlineProtocol) and c is not self and c._idle()]
        if not idle:
            return False
        # Kept alive between requests before one still sending its head (a slow client, but a
        # request on its way), the longest idle first.
        oldest = min(idle, key=lambda c: (c._head_open, c._idle_since))
        log.info("http.idle_connection_closed", peer=oldest.client[0] if oldest.client else None)
        oldest._close()
        oldest.connections.discard(oldest)  # out of the count now (connection_lost comes later)
        return True

    def _idle(self) -> bool:
        # Answered means sent: a slow client may still be taking in the last response.
        return not self.transport.is_closing() and not self.pipeline \
            and not self.transport.get_write_buffer_size() and not self.flow.write_paused \
            and (self.cycle is None or self.cycle.response_complete) \
            and (self._message_done or self._head_open)  # between requests, or in a head

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return
        self._received = True
        self._head_began_now = False
        super().data_received(data)
        if self._head_open and not self._head_began_now:
            self._head_pending += len(data)
            if self._head_pending > MAX_HEAD_BYTES and not self.transport.is_closing():
                log.info("http.head_too_large", peer=self.client[0] if self.client else None)
                self.send_400_response("Invalid HTTP request received.")  # as for a head the parser refuses
                return
        self._follow()

    # The parser's callbacks (uvicorn skips its own on_message_complete once the request is answered).
    def on_message_begin(self) -> None:
        self._message_done = False
        self._head_open = self._head_began_now = True
        self._head_bytes = self._head_pending = self._hosts = 0
        self._served += 1
        super().on_message_begin()
        # The request's scope says that this protocol bounds its head and cuts a slow body (app.http.bounds
        # stands aside).
        self.scope.setdefault("extensions", {})[SERVER_BOUNDS] = {}

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)  # ": " and CRLF
        if name.lower() == b"host":
            self._hosts += 1
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_open = False
        # The parser calls this; uvicorn drops it (None) only once the connection is lost.
        assert self.parser is not None
        if self._hosts > 1 or (self._hosts == 0 and self.parser.get_http_version() == "1.1"):
            raise BadHead("one Host header, and an HTTP/1.1 request needs it")  # RFC 9112 3.2, as h11 refuses
        if self.parser.should_upgrade():
            # Upgrade + Connection: upgrade (or CONNECT): llhttp hands what follows the head to the new protocol,
            # which uvicorn without WebSockets drops, and parses the next read as a new request: a body would be
            # lost and a request hidden in it run. This server switches to nothing: refused, connection closed.
            raise BadHead("protocol upgrades are not served")
        if len(self.pipeline) >= PIPELINE_DEPTH:
            # llhttp parses all a read brings (up to 256 KiB: thousands of short requests), and each
            # one parsed behind a running request waits in the pipeline, unseen by the app's caps.
            raise BadHead(f"more than {PIPELINE_DEPTH} requests pipelined")
        super().on_headers_complete()
        bounds = self._bounds
        if self._served >= bounds.requests or self.loop.time() - self._opened >= bounds.lifetime:
            self.cycle.keep_alive = False  # its response says Connection: close, then it ends

    def on_message_complete(self) -> None:
        self._message_done = True
        super().on_message_complete()

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            raise BadHead(f"request head over {MAX_HEAD_BYTES} bytes")

    def on_response_complete(self) -> None:
        self._idle_since = self.loop.time()
        super().on_response_complete()  # may start a pipelined request, or close
        # With a request pipelined behind this one (parsed already, running now), the deadlines wait for its end.
        if self.cycle is self._request and self.cycle.response_complete and not self.transport.is_closing():
            if not self._message_done and not self._head_open:
                # Answered before the body was in (a 404, a 413): the rest of it must still arrive in time,
                # and none of it counts as the next request.
                self._expect("body")
            else:
                self._expect_next_head()  # an idle connection is closed sooner (keep-alive)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        if self._send_deadline is not None:
            self._send_deadline.cancel()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_deadline is None:
            self._send_deadline = self._later(self._send_timeout, self._send_expired)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._send_deadline is not None:
            self._send_deadline.cancel()
            self._send_deadline = None

    def _follow(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle is not self._request:  # a new request's headers are in
            self._request = cycle
            if cycle.more_body:
                self._expect("body")
            else:
                self._cancel()
        elif self._awaiting == "body" and cycle is not None and (self._message_done or self._head_open):
            if cycle.response_complete:  # the body of a request already answered is in: next, headers
                self._expect_next_head()
            else:
                self._cancel()

    def _expect_next_head(self) -> None:
        # Already begun when it came in the same read as what went before (pipelined): its bytes count as arrived.
        begun = self._head_open
        self._expect("headers")
        self._received = begun

    def _expect(self, what: str) -> None:
        self._cancel()
        self._awaiting, self._received = what, False
        timeout = self._header_timeout if what == "headers" else self._body_timeout
        self._deadline = self._later(timeout, self._expired)

    def _later(self, delay: float, callback: Any) -> asyncio.TimerHandle:
        # An empty context: a timer armed while a request ran must not log with that request's id.
        return self.loop.call_later(delay, callback, context=contextvars.Context())

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._awaiting = ""

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        awaiting = self._awaiting
        if awaiting == "body" and (self.flow.read_paused or self.cycle.waiting_for_100_continue):
            # The wait is the server's: it stopped reading (the app has not taken the body so far) or the
            # client waits for "100 Continue" until the app reads. The client gets its time again.
            self._expect("body")
            return
        log.info("http.slow_client", awaiting=awaiting, peer=self.client[0] if self.client else None)
        if (awaiting == "body" and not self.cycle.response_started) or (awaiting == "headers" and self._received):
            self.transport.write(REQUEST_TIMEOUT)
            if self.transport.can_write_eof():
                # Lingering close: closing at once, with the client's next bytes arriving, would make the
                # kernel answer them with a reset that can destroy the 408 before the client reads it.
                self.transport.write_eof()
                self._lingering = True
                self._deadline = self._later(LINGER_S, self._close)
                return
        self._close()

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        self._running = cycle  # the request whose answer is being written (a pipelined one may be parsed since)
        super()._start_asgi_task(cycle, app)

    def _send_expired(self) -> None:
        self._send_deadline = None
        log.info("http.slow_client", awaiting="the client to read", peer=self.client[0] if self.client else None)
        # The app's pending and next sends return at once, as after the client's disconnect (uvloop would raise on
        # a write to the aborted transport): the request being answered, and the pipelined ones behind it.
        for cycle in (self._running, self.cycle, *(queued for queued, _ in self.pipeline)):
            if cycle is not None:
                cycle.disconnected = True
                cycle.message_event.set()  # an app waiting in receive() hears of it now
        self.transport.abort()

    def _close(self) -> None:
        # close() waits until the write buffer is flushed, which a client that reads nothing never lets happen.
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()
