"""The outbound HTTP guard: the only way server code fetches a URL that a caller supplied.

A caller-supplied URL (OAuth client metadata, a client's JWKS, an external IdP's JWKS, ...) must not become a way
to reach the server's own network (SSRF): loopback, private ranges, link-local, the cloud metadata service.
Checking the name and then letting the HTTP client resolve it again is not enough (DNS rebinding), so the
connection is pinned: our httpcore network backend (app.net.transport) resolves the name once, checks every
address, and connects the socket to a checked address, while TLS still verifies the certificate against the name.

httpcore is used directly rather than httpx so that no environment proxy (HTTP_PROXY, ...) is ever picked up,
which would move the connection somewhere the address check never looked at.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any
from urllib.parse import urlencode, urljoin

import anyio
import httpcore

from app.net.policy import Resolver, Target, non_public, norm_host, parse_allow, parse_ip, parse_url, system_resolver
from app.net.refusals import TOTAL_TIMEOUT, OutboundRefused, refused, say
from app.net.responses import Body, Fetched, Streamed, lower_headers
from app.net.transport import PinnedAsyncBackend, PinnedSyncBackend, hop_span, transport_errors

_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# Caller headers we own (framing, the pinned Host) or that must not follow a redirect to another origin.
_OWNED_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection", "accept-encoding"})
_CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
_HTTPS_ONLY = say.mark("only https is allowed")
# Where a public web server listens: any other port of a public host is refused (SSH, SMTP, Redis, memcached),
# so the guard cannot be pointed at services that are not the web, nor used to tell their ports apart.
WEB_PORTS = (443, 80)
# Threads resolving names at once, per guard. Resolution blocks a thread (getaddrinfo); on anyio's
# default limiter, which the rest of the process shares, a caller's slow DNS server could hold every
# thread (40) and starve what else needs one. Past this many, a fetch waits for a turn within its
# own total deadline.
RESOLVER_THREADS = 8


class OutboundGuard:
    def __init__(self, *, allowlist: Sequence[str] = (), resolver: Resolver = system_resolver,
                 connect_timeout: float = 5.0, read_timeout: float = 10.0, total_timeout: float = 15.0,
                 max_bytes: int = 1_000_000, max_redirects: int = 3, user_agent: str = "chatgpt-mcp-app-server",
                 ports: Sequence[int] = WEB_PORTS, resolver_threads: int = RESOLVER_THREADS):
        if isinstance(allowlist, str):
            raise TypeError("allowlist must be a sequence of 'host' or 'host:port' strings, not one string")
        self._allow = frozenset(parse_allow(e) for e in allowlist if e.strip())
        self._ports = frozenset(ports)
        self._resolver = resolver
        self._resolutions = anyio.CapacityLimiter(resolver_threads)
        self._connect_timeout, self._read_timeout, self._total_timeout = connect_timeout, read_timeout, total_timeout
        self._max_bytes, self._max_redirects, self._user_agent = max_bytes, max_redirects, user_agent

    # -- policy -----------------------------------------------------------------------------------------------

    def _allowlisted(self, host: str, port: int) -> bool:
        host = norm_host(host)
        return (host, port) in self._allow or (host, None) in self._allow

    def _policy(self, t: Target) -> str | None:
        if self._allowlisted(t.host, t.port):
            return None
        if t.scheme != "https":
            return say(_HTTPS_ONLY)
        addr = parse_ip(t.host)
        if addr is not None and (why := non_public(addr)):
            return why
        if t.port not in self._ports:
            return say("port {port} is not one this server fetches from ({ports})", port=t.port,
                       ports=", ".join(map(str, sorted(self._ports))))
        return None

    def refusal(self, url: str) -> str | None:
        """Scheme/host policy only (no DNS): None if the URL may be fetched, else the reason."""
        parsed = parse_url(url)
        return parsed[1] if isinstance(parsed, tuple) else self._policy(parsed)

    def _check(self, url: str) -> Target:
        parsed = parse_url(url)
        if isinstance(parsed, tuple):
            raise refused(*parsed)
        reason = self._policy(parsed)
        if reason:
            raise refused(parsed.host, reason, "url" if reason == _HTTPS_ONLY or reason.startswith("port ")
                          else "address")
        return parsed

    def address_allowed(self, ip: str, host: str, port: int) -> bool:
        if self._allowlisted(host, port):
            return True
        addr = parse_ip(ip)
        return addr is not None and non_public(addr) is None

    def _pinned_addresses(self, host: str, port: int) -> list[str]:
        """Resolve once and check every address; the connection may only go to one of these."""
        host = norm_host(host)
        if parse_ip(host) is not None:
            ips = [host]  # a literal is checked as is, never resolved
        else:
            try:
                ips = list(self._resolver(host, port))
            except (OSError, UnicodeError, ValueError) as exc:
                raise refused(host, say("host name does not resolve"), "network") from exc
            if not ips:
                raise refused(host, say("host name does not resolve"), "network")
        if not self._allowlisted(host, port):
            # Any bad address refuses the lot: which one the connection would use is not ours to decide.
            for ip in ips:
                addr = parse_ip(ip)
                why = non_public(addr) if addr is not None else say("unparseable address")
                if why:
                    reason = why if ips == [host] else say("resolves to a {why}", why=why)
                    raise refused(host, reason, "address")
        return ips

    # -- fetching ---------------------------------------------------------------------------------------------

    def _request(self, t: Target, extra: Mapping[str, str], deadline: float, form: bytes | None = None
                 ) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise refused(t.host, say(TOTAL_TIMEOUT), "timeout")
        connect, read = min(self._connect_timeout, remaining), min(self._read_timeout, remaining)
        # No decoding here, so the size cap counts the bytes callers get (no compression bombs).
        fixed = {"Host": t.authority, "User-Agent": self._user_agent, "Accept": "*/*", "Accept-Encoding": "identity"}
        headers = {name.lower(): (name, value) for name, value in fixed.items()}
        for name, value in extra.items():
            if name.lower() not in _OWNED_HEADERS:
                headers[name.lower()] = (name, value)
        if form is not None:
            headers["content-type"] = ("Content-Type", "application/x-www-form-urlencoded")
            headers["content-length"] = ("Content-Length", str(len(form)))
        request: dict[str, Any] = {
            "method": "GET" if form is None else "POST",
            "url": httpcore.URL(scheme=t.scheme.encode(), host=t.host.encode(), port=t.port, target=t.target.encode()),
            "headers": list(headers.values()),
            "extensions": {"timeout": {"connect": connect, "read": read, "write": read, "pool": connect}}}
        if form is not None:
            request["content"] = form
        return request

    def _next_hop(self, t: Target, status: int, headers: dict[str, str], hops: int) -> Target | None:
        location = headers.get("location")
        if status not in _REDIRECTS or not location:
            return None
        if hops >= self._max_redirects:
            raise refused(t.host, say("more than {count} redirects", count=self._max_redirects))
        try:
            return self._check(urljoin(t.url, location))
        except OutboundRefused as exc:
            raise refused(exc.host or t.host, say("redirect from {host}: {reason}", host=t.host,
                                                      reason=exc.reason), exc.kind) from None

    @staticmethod
    def _carry(extra: dict[str, str], old: Target, new: Target) -> dict[str, str]:
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
        with httpcore.ConnectionPool(network_backend=PinnedSyncBackend(self._pinned_addresses)) as pool:
            for hops in range(self._max_redirects + 1):
                with (hop_span(t) as span, transport_errors(t.host),
                      pool.stream(**self._request(t, extra, deadline)) as resp):
                    span.set_attribute("http.response.status_code", resp.status)
                    got = lower_headers(resp.headers)
                    nxt = self._next_hop(t, resp.status, got, hops)
                    if nxt is None:
                        body = Body(t.host, cap, deadline, got)
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

    async def post_form(self, url: str, form: Mapping[str, str], *, headers: Mapping[str, str] | None = None,
                        max_bytes: int | None = None) -> Fetched:
        """POST ``form`` (application/x-www-form-urlencoded) under the same checks as a GET: scheme, port,
        every address, the pinned connection, the deadline, the size cap. A redirect is never followed (it would
        send the form, credentials and all, somewhere else): the caller gets it as the answer."""
        body = urlencode(list(form.items())).encode()
        t, extra = self._check(url), dict(headers or {})
        deadline = time.monotonic() + self._total_timeout
        cap = self._max_bytes if max_bytes is None else max_bytes
        backend = PinnedAsyncBackend(self._pinned_addresses, self._resolutions)
        async with httpcore.AsyncConnectionPool(network_backend=backend) as pool:
            try:
                with anyio.fail_after(self._total_timeout), hop_span(t, "POST") as span, transport_errors(t.host):
                    async with pool.stream(**self._request(t, extra, deadline, body)) as resp:
                        span.set_attribute("http.response.status_code", resp.status)
                        got = lower_headers(resp.headers)
                        received = Body(t.host, cap, deadline, got)
                        async for chunk in resp.aiter_stream():
                            received.add(chunk)
                        return Fetched(t.url, resp.status, got, b"".join(received.chunks))
            except TimeoutError:
                raise refused(t.host, say(TOTAL_TIMEOUT), "timeout") from None

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
        backend = PinnedAsyncBackend(self._pinned_addresses, self._resolutions)
        async with httpcore.AsyncConnectionPool(network_backend=backend) as pool:
            try:
                # The deadline also covers DNS and a stalled single read, which the chunk check cannot see.
                with anyio.fail_after(total) as deadline_scope:
                    for hops in range(self._max_redirects + 1):
                        with hop_span(t) as span, transport_errors(t.host):
                            async with pool.stream(**self._request(t, extra, deadline)) as resp:
                                span.set_attribute("http.response.status_code", resp.status)
                                got = lower_headers(resp.headers)
                                nxt = self._next_hop(t, resp.status, got, hops)
                                if nxt is None:
                                    yield Streamed(t.url, resp.status, got,
                                                   Body(t.host, cap, deadline, got), resp.aiter_stream())
                                    return
                        extra, t = self._carry(extra, t, nxt), nxt
            except TimeoutError:
                if deadline_scope is None or not deadline_scope.cancelled_caught:
                    raise  # the caller's own timeout, raised through the body: not ours to relabel
                raise refused(first, say(TOTAL_TIMEOUT), "timeout") from None
        raise AssertionError("unreachable: _next_hop refuses past max_redirects")
