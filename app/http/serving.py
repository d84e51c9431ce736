"""The HTTP server around the app: uvicorn, with deadlines for slow clients and a SIGTERM that drains,
writes the log and exits 0.

uvicorn reads a request for as long as the client keeps sending (a header line every few seconds, a
body at a byte a second) and writes a response for as long as the client takes to read it: either
holds a connection, and in the app a task, indefinitely. The protocol below is uvicorn's own
protocol with three deadlines: a request's headers within ``header_timeout`` seconds of the
connection (or of the previous response); its body within ``body_timeout`` seconds of its headers,
not counting time the server itself spends not reading it; and a client that takes in nothing of a
response for ``send_timeout`` seconds is cut off. A client that misses a read deadline gets
``408 Request Timeout`` (nothing, if it never sent a byte) and the connection is closed, which the
app sees as the client's disconnect.

The protocol is uvicorn's httptools one (llhttp, in C: about a tenth of a millisecond less per
request than h11 here, ``docs/performance.md``). llhttp bounds nothing in the request head, so
the protocol does: a request line and headers past ``MAX_HEAD_BYTES`` (h11's own default) are
answered 400 and the connection is closed. A header that never ends reaches no parser callback:
it is counted by the reads that bring it, after the one its request began in (up to 256 KiB), so
it is cut at that read plus 16 KiB. Also refused: more than one Host header, or none in an
HTTP/1.1 request, which h11 refused and llhttp serves.
"""

from __future__ import annotations

import asyncio
import contextvars
import signal
from typing import TYPE_CHECKING, Any

import structlog
import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import Server
from uvicorn.supervisors import Multiprocess

if TYPE_CHECKING:
    from app.settings import Settings

log = structlog.get_logger("app.http")

_TIMEOUT_BODY = b"The request took too long to arrive.\n"
REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"connection: close\r\ncontent-length: " + str(len(_TIMEOUT_BODY)).encode() + b"\r\n\r\n"
                   + _TIMEOUT_BODY)
LINGER_S = 2.0  # after a 408: how long what the client still sends is read and dropped
MAX_HEAD_BYTES = 16 * 1024  # a request line and its headers, as h11 bounds them


class BadHead(Exception):
    """Raised from the parser's callbacks: uvicorn answers a parser error 400 and closes the connection."""


class ServeConfig(uvicorn.Config):
    """uvicorn's Config, plus the deadlines the protocol applies (it is what reaches each worker).

    WebSockets are off: the app serves none, and an upgrade handed to a WebSocket protocol escapes
    the deadlines (one with a body was never answered, and crashed the server's shutdown).
    """

    def __init__(self, *args: Any, header_timeout: float, body_timeout: float, send_timeout: float,
                 **kwargs: Any) -> None:
        super().__init__(*args, http="app.http.serving:DeadlineProtocol", ws="none", **kwargs)
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.send_timeout = send_timeout


def serve_config(settings: Settings, factory: str, *, host: str, port: int, workers: int) -> ServeConfig:
    """How ``serve`` runs ``factory`` (a module:callable each worker imports and calls)."""
    return ServeConfig(
        factory,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=None,  # keep our structlog configuration
        # The app applies APP_TRUSTED_PROXIES itself (app.http.middleware.client_address); uvicorn's own pass
        # would read FORWARDED_ALLOW_IPS from the environment and could apply a second, different rule.
        proxy_headers=False,
        # SIGTERM: stop accepting, give the requests in flight this long, then the lifespan's shutdown.
        timeout_graceful_shutdown=settings.shutdown_grace,
        header_timeout=settings.http_header_timeout,
        body_timeout=settings.http_body_timeout,
        send_timeout=settings.http_send_timeout,
    )


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with deadlines for a request's headers, its body, and the client taking
    in the response, and a bound on the request head."""

    def __init__(self, config: ServeConfig, server_state: Any, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._header_timeout = config.header_timeout
        self._body_timeout = config.body_timeout
        self._send_timeout = config.send_timeout
        self._deadline: asyncio.TimerHandle | None = None
        self._awaiting = ""  # "headers" | "body" while a deadline runs
        self._received = False  # a byte of the awaited request has arrived
        self._request: object | None = None  # the request cycle whose headers were last seen
        self._lingering = False  # answered 408: what still arrives is dropped until the connection closes
        self._send_deadline: asyncio.TimerHandle | None = None
        self._message_done = True  # the parser has seen the whole of the last request (its body included)
        # The request head: what the parser has handed over (a URL piece, a whole header), and what arrived while
        # it was still open, after the read it began in (a header that never ends reaches no callback).
        self._head_open = self._head_began_now = False
        self._head_bytes = self._head_pending = self._hosts = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._expect("headers")

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
        super().on_message_begin()

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
        if self._hosts > 1 or (self._hosts == 0 and self.parser.get_http_version() == "1.1"):
            raise BadHead("one Host header, and an HTTP/1.1 request needs it")  # RFC 9112 3.2, as h11 refuses
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._message_done = True
        super().on_message_complete()

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            raise BadHead(f"request head over {MAX_HEAD_BYTES} bytes")

    def on_response_complete(self) -> None:
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

    def _send_expired(self) -> None:
        self._send_deadline = None
        log.info("http.slow_client", awaiting="the client to read", peer=self.client[0] if self.client else None)
        self.transport.abort()  # the app's pending send returns (disconnected) and its task ends

    def _close(self) -> None:
        # close() waits until the write buffer is flushed, which a client that reads nothing never lets happen.
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()


def run_server(config: ServeConfig) -> int:
    """Serve until SIGTERM or SIGINT, drain, and exit 0 with the log written (docker stop, a rolling deploy).

    uvicorn ends its process by re-raising the signal after a graceful shutdown, under the handler there
    was before it started: the default one would kill this process (exit 143) before the log writer
    wrote the last lines. A handler of our own takes that re-raised signal, and serve returns. Workers
    (``--workers N``) are ended by that signal, their log written through by then
    (``app.http.middleware.log_written_through_shutdown``); the supervisor here returns once all have.
    """
    if config.workers > 1:
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
        # A worker that could not start stops the supervisor: say so in the exit code (restart policies).
        return STARTUP_FAILURE if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes) else 0
    server = Server(config=config)
    handled = {sig: signal.signal(sig, _already_handled) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()
    finally:
        for sig, handler in handled.items():
            signal.signal(sig, handler)
    return 0 if server.started else STARTUP_FAILURE


def _already_handled(sig: int, frame: Any) -> None:
    """What uvicorn re-raises after its graceful shutdown: the signal has done its work."""
