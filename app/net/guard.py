"""The outbound HTTP guard: the only way server code fetches a URL that a caller supplied.

A caller-supplied URL (OAuth client metadata, a client's JWKS, an external IdP's JWKS, ...) must not become a way
to reach the server's own network (SSRF): loopback, private ranges, link-local, the cloud metadata service.
Checking the name and then letting the HTTP client resolve it again is not enough (DNS rebinding), so the
connection is pinned: our httpcore network backend resolves the name once, checks every address, and connects
the socket to a checked address. TLS still verifies the certificate against the *name*: httpcore takes
``server_hostname`` from the request origin (``sni_hostname`` extension or ``origin.host``, see
httpcore/_sync/connection.py ``_connect``), never from the address the backend connected to.

httpcore is used directly rather than httpx so that no environment proxy (HTTP_PROXY, ...) is ever picked up,
which would move the connection somewhere the address check never looked at.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import string
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import anyio
import anyio.to_thread
import httpcore
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Named even when the ranges below already cover them, so a future change to `is_global` cannot reopen them.
# 168.63.129.16 is Azure's wireserver: a public-looking address that answers only inside Azure.
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Caller headers we own (framing, the pinned Host) or that must not follow a redirect to another origin.
_OWNED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
_HOST_RE = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_PRINTABLE = string.punctuation  # keep every printable ASCII char (and existing %XX); percent-encode the rest
_MAX_URL = 8192
_HTTPS_ONLY = "only https is allowed"


# What went wrong, for callers that word it for their users: the URL itself (scheme, syntax, redirects), where it
# leads (a non-public address), the size cap, a deadline, or the network (DNS, connection, HTTP framing).
REFUSAL_KINDS = ("url", "address", "size", "timeout", "network")


class OutboundRefused(Exception):
    """The URL or where it leads is not allowed / failed; str(exc) is one safe line naming the host and the reason
    (never the full URL query string); ``kind`` is one of REFUSAL_KINDS."""

    def __init__(self, message: str, *, host: str = "", reason: str = "", kind: str = "url") -> None:
        super().__init__(message)
        self.host = host
        self.reason = reason or message
        self.kind = kind


def _refused(host: str, reason: str, kind: str = "url") -> OutboundRefused:
    return OutboundRefused(f"outbound fetch to {host or '?'} refused: {reason}", host=host, reason=reason, kind=kind)


@dataclass(frozen=True)
class Fetched:
    url: str  # final URL after redirects
    status: int
    headers: dict[str, str]  # lower-cased names (last value wins)
    body: bytes


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _non_public(addr: IPAddress) -> str | None:
    """Why this address must not be contacted, or None if it is an ordinary public address."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id:
            return "non-public address"
        # These forms reach an IPv4 host; what matters is that host.
        embedded = addr.ipv4_mapped or addr.sixtofour
        if embedded is None and addr in _NAT64:
            embedded = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
        if embedded is not None:
            return _non_public(embedded)
        if addr.is_site_local:
            return "non-public address"
    if addr in _METADATA:
        return "cloud metadata address"
    if (not addr.is_global or addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_multicast
            or addr.is_reserved or addr.is_unspecified or addr in _SHARED):
        return "non-public address"
    return None


def _ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _norm_host(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


def _safe_host(url: str) -> str:
    """Best-effort host of a URL for an error message: printable, short, never the path or query."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return re.sub(r"[^A-Za-z0-9.:_-]", "?", host)[:100]


@dataclass(frozen=True)
class _Target:
    """A parsed, normalised URL: what we send is rebuilt from these parts, never the raw string."""

    scheme: str
    host: str  # lower-case, IDNA, no brackets, no trailing dot
    port: int
    target: str  # path + query, printable ASCII

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host, self.port


def _parse(url: str) -> _Target | tuple[str, str]:
    """The URL's parts, or (host, reason) when it cannot be fetched whatever the policy."""
    host = _safe_host(url) if isinstance(url, str) else ""
    if not isinstance(url, str) or len(url) > _MAX_URL:
        return host, "URL missing or too long"
    if _BAD_URL_CHARS.search(url):
        return host, "URL contains spaces, control characters or backslashes"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return host, "malformed URL or port"
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return host, f"scheme {scheme[:10]!r} not allowed"
    if "@" in parts.netloc:
        return host, "credentials in URL not allowed"
    raw = _norm_host(parts.hostname or "")
    if not raw:
        return host, "URL has no host"
    if _ip(raw) is None:
        try:
            raw = raw.encode("idna").decode("ascii")
        except UnicodeError:
            return host, "invalid host name"
        if not _HOST_RE.fullmatch(raw):
            return host, "invalid host name"
    elif "%" in raw:
        return host, "scoped IPv6 address not allowed"
    if port == 0:
        return raw, "invalid port"
    target = quote(parts.path or "/", safe=_PRINTABLE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_PRINTABLE)
    return _Target(scheme, raw, port or _DEFAULT_PORTS[scheme], target)


def _parse_allow(entry: str) -> tuple[str, int | None]:
    entry = entry.strip().lower()
    if entry.startswith("["):  # [v6] or [v6]:port
        host, _, rest = entry[1:].partition("]")
        return _norm_host(host), int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return _norm_host(host), int(port)
    return _norm_host(entry), None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextmanager
def _transport_errors(host: str) -> Iterator[None]:
    try:
        yield
    except httpcore.TimeoutException as exc:
        kind = {httpcore.ConnectTimeout: "connect", httpcore.ReadTimeout: "read", httpcore.WriteTimeout: "write"}
        raise _refused(host, f"{kind.get(type(exc), 'pool')} timed out", "timeout") from exc
    except httpcore.NetworkError as exc:  # OS / TLS error text: no URL in it
        raise _refused(host, f"connection failed ({_short(exc)})", "network") from exc
    except (httpcore.ProtocolError, httpcore.UnsupportedProtocol) as exc:  # message may quote the request: omit it
        raise _refused(host, f"bad HTTP exchange ({type(exc).__name__})", "network") from exc


# The global provider's: a no-op until app.observability.traces configures one. httpcore has no
# instrumentation package, so each request this guard sends (a redirect hop is one) is a span of its own.
_tracer = trace.get_tracer("app.net.guard")


@contextmanager
def _hop_span(t: _Target) -> Iterator[trace.Span]:
    """A client span for one request, not made current (it is held across a ``yield`` to the caller, whose work
    must not nest under it). The URL loses its query: signed download links carry their credential there."""
    span = _tracer.start_span("GET", kind=SpanKind.CLIENT, attributes={
        "http.request.method": "GET", "server.address": t.host, "server.port": t.port,
        "url.full": f"{t.scheme}://{t.authority}{t.target.split('?', 1)[0]}"})
    try:
        yield span
    except BaseException as exc:
        span.set_attribute("error.type", exc.kind if isinstance(exc, OutboundRefused) else type(exc).__qualname__)
        span.set_status(StatusCode.ERROR)
        raise
    finally:
        span.end()


class _Body:
    """Collects a response body under the size cap and the total deadline."""

    def __init__(self, host: str, cap: int, deadline: float, headers: dict[str, str]) -> None:
        self.host, self.cap, self.deadline = host, cap, deadline
        self.chunks: list[bytes] = []
        self.size = 0
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise _refused(host, f"response declared larger than {cap} bytes", "size")

    def count(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.cap:
            raise _refused(self.host, f"response larger than {self.cap} bytes", "size")
        if time.monotonic() > self.deadline:
            raise _refused(self.host, "total timeout exceeded", "timeout")

    def add(self, chunk: bytes) -> None:
        self.count(chunk)
        self.chunks.append(chunk)


def _lower_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


class OutboundGuard:
    def __init__(self, *, allowlist: Sequence[str] = (), resolver: Resolver = system_resolver,
                 connect_timeout: float = 5.0, read_timeout: float = 10.0, total_timeout: float = 15.0,
                 max_bytes: int = 1_000_000, max_redirects: int = 3, user_agent: str = "chatgpt-mcp-app-server"):
        if isinstance(allowlist, str):
            raise TypeError("allowlist must be a sequence of 'host' or 'host:port' strings, not one string")
        self._allow = frozenset(_parse_allow(e) for e in allowlist if e.strip())
        self._resolver = resolver
        self._connect_timeout, self._read_timeout, self._total_timeout = connect_timeout, read_timeout, total_timeout
        self._max_bytes, self._max_redirects, self._user_agent = max_bytes, max_redirects, user_agent

    # -- policy -----------------------------------------------------------------------------------------------

    def _allowlisted(self, host: str, port: int) -> bool:
        host = _norm_host(host)
        return (host, port) in self._allow or (host, None) in self._allow

    def _policy(self, t: _Target) -> str | None:
        if self._allowlisted(t.host, t.port):
            return None
        if t.scheme != "https":
            return _HTTPS_ONLY
        addr = _ip(t.host)
        return _non_public(addr) if addr is not None else None

    def refusal(self, url: str) -> str | None:
        """Scheme/host policy only (no DNS): None if the URL may be fetched, else the reason."""
        parsed = _parse(url)
        return parsed[1] if isinstance(parsed, tuple) else self._policy(parsed)

    def _check(self, url: str) -> _Target:
        parsed = _parse(url)
        if isinstance(parsed, tuple):
            raise _refused(*parsed)
        reason = self._policy(parsed)
        if reason:
            raise _refused(parsed.host, reason, "url" if reason == _HTTPS_ONLY else "address")
        return parsed

    def address_allowed(self, ip: str, host: str, port: int) -> bool:
        if self._allowlisted(host, port):
            return True
        addr = _ip(ip)
        return addr is not None and _non_public(addr) is None

    def _pinned_addresses(self, host: str, port: int) -> list[str]:
        """Resolve once and check every address; the connection may only go to one of these."""
        host = _norm_host(host)
        if _ip(host) is not None:
            ips = [host]  # a literal is checked as is, never resolved
        else:
            try:
                ips = list(self._resolver(host, port))
            except (OSError, UnicodeError, ValueError) as exc:
                raise _refused(host, "host name does not resolve", "network") from exc
            if not ips:
                raise _refused(host, "host name does not resolve", "network")
        if not self._allowlisted(host, port):
            # Any bad address refuses the lot: which one the connection would use is not ours to decide.
            for ip in ips:
                addr = _ip(ip)
                why = _non_public(addr) if addr is not None else "unparseable address"
                if why:
                    raise _refused(host, why if ips == [host] else f"resolves to a {why}", "address")
        return ips

    # -- fetching ---------------------------------------------------------------------------------------------

    def _request(self, t: _Target, extra: Mapping[str, str], deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _refused(t.host, "total timeout exceeded", "timeout")
        connect, read = min(self._connect_timeout, remaining), min(self._read_timeout, remaining)
        # No decoding here, so the size cap counts the bytes callers get (no compression bombs).
        fixed = {"Host": t.authority, "User-Agent": self._user_agent, "Accept": "*/*", "Accept-Encoding": "identity"}
        headers = {name.lower(): (name, value) for name, value in fixed.items()}
        for name, value in extra.items():
            if name.lower() not in _OWNED_HEADERS:
                headers[name.lower()] = (name, value)
        return {"method": "GET", "url": httpcore.URL(scheme=t.scheme.encode(), host=t.host.encode(), port=t.port,
                                                     target=t.target.encode()),
                "headers": list(headers.values()),
                "extensions": {"timeout": {"connect": connect, "read": read, "write": read, "pool": connect}}}

    def _next_hop(self, t: _Target, status: int, headers: dict[str, str], hops: int) -> _Target | None:
        location = headers.get("location")
        if status not in _REDIRECTS or not location:
            return None
        if hops >= self._max_redirects:
            raise _refused(t.host, f"more than {self._max_redirects} redirects")
        try:
            return self._check(urljoin(t.url, location))
        except OutboundRefused as exc:
            raise _refused(exc.host or t.host, f"redirect from {t.host}: {exc.reason}", exc.kind) from None

    @staticmethod
    def _carry(extra: dict[str, str], old: _Target, new: _Target) -> dict[str, str]:
        if old.origin == new.origin:
            return extra
        return {k: v for k, v in extra.items() if k.lower() not in _CREDENTIAL_HEADERS}

    # A fresh pool per fetch: no connection outlives the check that admitted it or is shared between callers,
    # and there is nothing to close at shutdown. Keep-alive across fetches is lost; these fetches are rare and
    # cached by their callers.

    def fetch_sync(self, url: str, *, headers: Mapping[str, str] | None = None,
                   max_bytes: int | None = None) -> Fetched:
        # The total deadline bounds connect, each read and the body, but not a hung system resolver here (a
        # blocking getaddrinfo cannot be interrupted); async callers should use `fetch`, which abandons it.
        deadline = time.monotonic() + self._total_timeout
        cap = self._max_bytes if max_bytes is None else max_bytes
        t, extra = self._check(url), dict(headers or {})
        with httpcore.ConnectionPool(network_backend=_PinnedSyncBackend(self)) as pool:
            for hops in range(self._max_redirects + 1):
                with (_hop_span(t) as span, _transport_errors(t.host),
                      pool.stream(**self._request(t, extra, deadline)) as resp):
                    span.set_attribute("http.response.status_code", resp.status)
                    got = _lower_headers(resp.headers)
                    nxt = self._next_hop(t, resp.status, got, hops)
                    if nxt is None:
                        body = _Body(t.host, cap, deadline, got)
                        for chunk in resp.iter_stream():
                            body.add(chunk)
                        return Fetched(t.url, resp.status, got, b"".join(body.chunks))
                extra, t = self._carry(extra, t, nxt), nxt
        raise AssertionError("unreachable: _next_hop refuses past max_redirects")

    async def fetch(self, url: str, *, headers: Mapping[str, str] | None = None,
                    max_bytes: int | None = None) -> Fetched:
        async with self.stream(url, headers=headers, max_bytes=max_bytes) as resp, aclosing(resp.chunks()) as chunks:
            body = [chunk async for chunk in chunks]
            return Fetched(resp.url, resp.status, resp.headers, b"".join(body))

    @asynccontextmanager
    async def stream(self, url: str, *, headers: Mapping[str, str] | None = None, max_bytes: int | None = None,
                     total_timeout: float | None = None) -> AsyncIterator[Streamed]:
        """The final response (redirects followed and re-checked) with its body not yet read: iterate
        ``chunks()`` to read it under the size cap. The total deadline covers everything from DNS to the body's
        last byte, including time the caller spends between chunks; past it, ``OutboundRefused``."""
        total = self._total_timeout if total_timeout is None else total_timeout
        deadline = time.monotonic() + total
        cap = self._max_bytes if max_bytes is None else max_bytes
        t, extra = self._check(url), dict(headers or {})
        first = t.host
        deadline_scope: anyio.CancelScope | None = None
        async with httpcore.AsyncConnectionPool(network_backend=_PinnedAsyncBackend(self)) as pool:
            try:
                # The deadline also covers DNS and a stalled single read, which the chunk check cannot see.
                with anyio.fail_after(total) as deadline_scope:
                    for hops in range(self._max_redirects + 1):
                        with _hop_span(t) as span, _transport_errors(t.host):
                            async with pool.stream(**self._request(t, extra, deadline)) as resp:
                                span.set_attribute("http.response.status_code", resp.status)
                                got = _lower_headers(resp.headers)
                                nxt = self._next_hop(t, resp.status, got, hops)
                                if nxt is None:
                                    yield Streamed(t.url, resp.status, got,
                                                   _Body(t.host, cap, deadline, got), resp.aiter_stream())
                                    return
                        extra, t = self._carry(extra, t, nxt), nxt
            except TimeoutError:
                if deadline_scope is None or not deadline_scope.cancelled_caught:
                    raise  # the caller's own timeout, raised through the body: not ours to relabel
                raise _refused(first, "total timeout exceeded", "timeout") from None
        raise AssertionError("unreachable: _next_hop refuses past max_redirects")


@dataclass
class Streamed:
    """A response whose body is read by iterating ``chunks()``: at most the cap, before the deadline."""

    url: str  # final URL after redirects
    status: int
    headers: dict[str, str]  # lower-cased names (last value wins)
    _body: _Body
    _raw: AsyncIterator[bytes]

    async def chunks(self) -> AsyncIterator[bytes]:
        with _transport_errors(self._body.host):
            async for chunk in self._raw:
                self._body.count(chunk)
                yield chunk


class _PinnedSyncBackend(httpcore.SyncBackend):
    def __init__(self, guard: OutboundGuard) -> None:
        self._guard = guard

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        failure: Exception | None = None
        for ip in self._guard._pinned_addresses(host, port):
            try:
                return super().connect_tcp(ip, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # e.g. no IPv6 route: try the next checked address
                failure = exc
        raise failure or httpcore.ConnectError("no address to connect to")


class _PinnedAsyncBackend(httpcore.AnyIOBackend):
    def __init__(self, guard: OutboundGuard) -> None:
        self._guard = guard

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,  # noqa: ASYNC109 (httpcore API)
                          local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        # getaddrinfo blocks; abandoning the thread lets the total deadline still apply to a hung resolver.
        ips = await anyio.to_thread.run_sync(self._guard._pinned_addresses, host, port, abandon_on_cancel=True)
        failure: Exception | None = None
        for ip in ips:
            try:
                return await super().connect_tcp(ip, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:
                failure = exc
        raise failure or httpcore.ConnectError("no address to connect to")
