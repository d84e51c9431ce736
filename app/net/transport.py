"""The outbound guard's HTTP machinery below the policy: network backends that connect only to checked
addresses, httpcore's errors as refusals, and a span per request sent.

TLS still verifies the certificate against the *name*: httpcore takes ``server_hostname`` from the request origin
(``sni_hostname`` extension or ``origin.host``, see httpcore/_sync/connection.py ``_connect``), never from the
address the backend connected to.
"""

from __future__ import annotations

import errno
import ssl
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread
import httpcore

# httpcore.AnyIOBackend is this same class, but a stand-in when anyio is missing, which the checker
# sees: from here it is the real one (anyio is a dependency).
from httpcore._backends.anyio import AnyIOBackend
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from app.net.policy import Target
from app.net.refusals import OutboundRefused, refused, say

# Resolves a host once and checks every address; a connection may only go to one of those it returns.
Pin = Callable[[str, int], list[str]]


_TIMEOUTS = {httpcore.ConnectTimeout: say.mark("connect timed out"),
             httpcore.ReadTimeout: say.mark("read timed out"),
             httpcore.WriteTimeout: say.mark("write timed out"),
             httpcore.PoolTimeout: say.mark("pool timed out")}


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def transport_errors(host: str) -> Iterator[None]:
    try:
        yield
    except httpcore.TimeoutException as exc:
        reason = _TIMEOUTS.get(type(exc), _TIMEOUTS[httpcore.PoolTimeout])
        raise refused(host, say(reason), "timeout") from exc
    except httpcore.NetworkError as exc:  # OS / TLS error text: no URL in it, for the log only
        raise refused(host, say(_network_reason(exc)), "network", _short(exc)) from exc
    except (httpcore.ProtocolError, httpcore.UnsupportedProtocol) as exc:  # message may quote the request: omit it
        raise refused(host, say("bad HTTP exchange"), "network", type(exc).__name__) from exc


# What a person is told of a failed connection, in the server's words (the system's own text, in
# its language and with its errno, goes to the log): by the first cause in httpcore's error's chain
# that says which.
_CONNECTION = say.mark("connection failed")
_NETWORK_REASONS: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (ssl.SSLError, say.mark("connection failed: no secure (TLS) connection could be made")),
    (ConnectionRefusedError, say.mark("connection failed: refused by the host")),
    ((ConnectionResetError, ConnectionAbortedError, BrokenPipeError),
     say.mark("connection failed: cut off by the host")),
)
_UNREACHABLE = say.mark("connection failed: the host cannot be reached")


def _network_reason(exc: BaseException) -> str:
    cause: BaseException | None = exc
    for _ in range(8):  # a chain is a few links: httpcore's error, anyio's, the OS's
        if cause is None:
            break
        for kind, reason in _NETWORK_REASONS:
            if isinstance(cause, kind):
                return reason
        if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return _UNREACHABLE
        cause = cause.__cause__ or cause.__context__
    return _CONNECTION


# The global provider's: a no-op until app.observability.traces configures one. httpcore has no
# instrumentation package, so each request this guard sends (a redirect hop is one) is a span of its own.
# Named after the guard, not this module: the scope is what traces are read by (docs/observability.md).
_tracer = trace.get_tracer("app.net.guard")


@contextmanager
def hop_span(t: Target, method: str = "GET") -> Iterator[trace.Span]:
    """A client span for one request, not made current (it is held across a ``yield`` to the caller, whose work
    must not nest under it). The URL loses its query: signed download links carry their credential there."""
    span = _tracer.start_span(method, kind=SpanKind.CLIENT, attributes={
        "http.request.method": method, "server.address": t.host, "server.port": t.port,
        "url.full": f"{t.scheme}://{t.authority}{t.target.split('?', 1)[0]}"})
    try:
        yield span
    except BaseException as exc:
        span.set_attribute("error.type", exc.kind if isinstance(exc, OutboundRefused) else type(exc).__qualname__)
        span.set_status(StatusCode.ERROR)
        raise
    finally:
        span.end()


class PinnedSyncBackend(httpcore.SyncBackend):
    def __init__(self, pin: Pin) -> None:
        self._pin = pin

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        failure: Exception | None = None
        for ip in self._pin(host, port):
            try:
                return super().connect_tcp(ip, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # e.g. no IPv6 route: try the next checked address
                failure = exc
        raise failure or httpcore.ConnectError("no address to connect to")


class PinnedAsyncBackend(AnyIOBackend):
    def __init__(self, pin: Pin, resolutions: anyio.CapacityLimiter) -> None:
        self._pin = pin
        self._resolutions = resolutions  # threads of its own for name resolution (guard.py)

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109 (httpcore API)
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        # getaddrinfo blocks; abandoning the thread lets the total deadline still apply to a hung resolver.
        ips = await anyio.to_thread.run_sync(self._pin, host, port, abandon_on_cancel=True,
                                             limiter=self._resolutions)
        failure: Exception | None = None
        for ip in ips:
            try:
                return await super().connect_tcp(ip, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure or httpcore.ConnectError("no address to connect to")
