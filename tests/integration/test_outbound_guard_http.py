"""OutboundGuard against real HTTP servers on 127.0.0.1 (and nothing else: names go through injected resolvers)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from app.net import OutboundGuard, OutboundRefused


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        self.server.seen.append((path, {k.lower(): v for k, v in self.headers.items()}))
        if path == "/ok":
            self._send(200, b"hello", {"X-Test": "a", "x-test": "b"})
        elif path == "/echo":
            self._send(200, f"{self.headers['Host']}|{self.headers.get('Authorization')}|{self.headers.get('X-Custom')}"
                       .encode())
        elif path == "/missing":
            self._send(404, b"nope")
        elif path.startswith("/redirect/"):
            left = int(path.rsplit("/", 1)[1])
            self._send(302, headers={"Location": f"/redirect/{left - 1}" if left > 1 else "/ok"})
        elif path == "/loop":
            self._send(307, headers={"Location": "/loop"})
        elif path == "/to":
            self._send(int(query.get("status", ["302"])[0]), headers={"Location": query["u"][0]})
        elif path == "/big-declared":
            self._send(200, b"x" * 5000)
        elif path == "/big-chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(10):
                self.wfile.write(b"1f4\r\n" + b"y" * 500 + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
        elif path in ("/drip", "/hang"):
            if path == "/hang":
                time.sleep(2)
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(1000):
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass  # the guard hung up, as it should
        else:
            self._send(500, b"unknown path")

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
        if self.path.startswith("/to"):
            self._send(307, headers={"Location": parse_qs(urlsplit(self.path).query)["u"][0]})
        else:  # /form: what arrived, as the server read it
            self._send(200, f"{self.headers['Content-Type']}|{body.decode()}".encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.port = self.server_address[1]


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    pair = (Server(), Server())
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True) for s in pair]
    for t in threads:
        t.start()
    yield pair
    for s in pair:
        s.shutdown()
        s.server_close()


@pytest.fixture
def server(servers) -> Server:
    return servers[0]


def guard_for(server: Server, **kwargs) -> OutboundGuard:
    kwargs.setdefault("allowlist", [f"127.0.0.1:{server.port}"])
    return OutboundGuard(**kwargs)


def base(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}"


def test_fetch_sync_ok(server):
    got = guard_for(server).fetch_sync(base(server) + "/ok")
    assert (got.url, got.status, got.body) == (base(server) + "/ok", 200, b"hello")
    assert got.headers["x-test"] == "b" and got.headers["content-length"] == "5"
    sent = server.seen[0][1]
    assert sent["user-agent"] == "chatgpt-mcp-app-server" and sent["accept-encoding"] == "identity"


@pytest.mark.anyio
async def test_fetch_async_ok(server):
    got = await guard_for(server).fetch(base(server) + "/ok")
    assert (got.status, got.body, got.headers["x-test"]) == (200, b"hello", "b")


def test_non_2xx_is_returned(server):
    got = guard_for(server).fetch_sync(base(server) + "/missing")
    assert (got.status, got.body) == (404, b"nope")


def test_redirect_chain_followed(server):
    got = guard_for(server).fetch_sync(base(server) + "/redirect/3")
    assert (got.url, got.body) == (base(server) + "/ok", b"hello")
    assert [p for p, _ in server.seen] == ["/redirect/3", "/redirect/2", "/redirect/1", "/ok"]


@pytest.mark.anyio
async def test_redirect_chain_followed_async(server):
    got = await guard_for(server).fetch(base(server) + "/redirect/2")
    assert got.body == b"hello"


def test_redirect_loop_refused(server):
    with pytest.raises(OutboundRefused, match="more than 3 redirects"):
        guard_for(server).fetch_sync(base(server) + "/loop")
    assert len(server.seen) == 4


@pytest.mark.anyio
async def test_redirect_beyond_max_refused_async(server):
    with pytest.raises(OutboundRefused, match="more than 1 redirects"):
        await guard_for(server, max_redirects=1).fetch(base(server) + "/redirect/2")


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_redirect_to_other_loopback_port_refused(servers, scheme):
    server, other = servers
    target = f"{scheme}://127.0.0.1:{other.port}/ok"
    with pytest.raises(OutboundRefused, match="redirect from 127.0.0.1"):
        guard_for(server).fetch_sync(base(server) + f"/to?u={target}")
    assert other.seen == []


@pytest.mark.anyio
@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "https://169.254.169.254/",
                                    "https://[::1]/", "https://10.0.0.1/"])
async def test_redirect_to_private_address_refused(server, target):
    with pytest.raises(OutboundRefused, match="redirect from"):
        await guard_for(server).fetch(base(server) + f"/to?u={target}&status=308")


def test_redirect_to_name_resolving_private_refused(servers):
    server, other = servers
    # Its port opened (APP_OUTBOUND_PORTS): what stops the hop is where the name leads.
    guard = guard_for(server, resolver=lambda host, port: ["127.0.0.1"], ports=[443, other.port])
    with pytest.raises(OutboundRefused, match="sneaky.test refused: resolves to a non-public"):
        guard.fetch_sync(base(server) + f"/to?u=https://sneaky.test:{other.port}/ok")
    assert other.seen == []


def test_credentials_dropped_on_cross_origin_redirect(servers):
    server, other = servers
    guard = OutboundGuard(allowlist=[f"127.0.0.1:{server.port}", f"127.0.0.1:{other.port}"])
    headers = {"Authorization": "Bearer t", "X-Custom": "kept", "Host": "evil.example"}
    same = guard.fetch_sync(base(server) + "/to?u=/echo", headers=headers)
    assert same.body == f"127.0.0.1:{server.port}|Bearer t|kept".encode()  # the Host header is never the caller's
    moved = guard.fetch_sync(base(server) + f"/to?u={base(other)}/echo", headers=headers)
    assert moved.body == f"127.0.0.1:{other.port}|None|kept".encode()


@pytest.mark.parametrize("path", ["/big-declared", "/big-chunked"])
def test_body_over_max_bytes_refused(server, path):
    guard = guard_for(server, max_bytes=1000)
    with pytest.raises(OutboundRefused, match="larger than 1000 bytes"):
        guard.fetch_sync(base(server) + path)
    assert len(guard.fetch_sync(base(server) + path, max_bytes=5000).body) == 5000


@pytest.mark.anyio
async def test_body_over_max_bytes_refused_async(server):
    guard = guard_for(server)
    with pytest.raises(OutboundRefused, match="declared larger than 100 bytes"):
        await guard.fetch(base(server) + "/big-declared", max_bytes=100)
    with pytest.raises(OutboundRefused, match="larger than 4999 bytes"):
        await guard.fetch(base(server) + "/big-chunked", max_bytes=4999)


def test_slow_drip_cut_off_by_total_timeout(server):
    started = time.monotonic()
    with pytest.raises(OutboundRefused, match="total timeout exceeded"):
        guard_for(server, total_timeout=0.6, read_timeout=5).fetch_sync(base(server) + "/drip")
    assert time.monotonic() - started < 1.5


@pytest.mark.anyio
async def test_slow_drip_cut_off_by_total_timeout_async(server):
    started = time.monotonic()
    with pytest.raises(OutboundRefused, match="total timeout exceeded"):
        await guard_for(server, total_timeout=0.6, read_timeout=5).fetch(base(server) + "/drip")
    assert time.monotonic() - started < 1.5


def test_read_timeout(server):
    with pytest.raises(OutboundRefused, match="read timed out"):
        guard_for(server, read_timeout=0.3).fetch_sync(base(server) + "/hang")


def test_connection_refused_is_a_clear_refusal():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening
        with pytest.raises(OutboundRefused, match="connection failed"):
            OutboundGuard(allowlist=[f"127.0.0.1:{port}"]).fetch_sync(f"http://127.0.0.1:{port}/?k=SECRET")


def test_loopback_refused_without_allowlist(server):
    with pytest.raises(OutboundRefused, match="only https"):
        OutboundGuard().fetch_sync(base(server) + "/ok")
    with pytest.raises(OutboundRefused, match="non-public"):
        OutboundGuard().fetch_sync(f"https://127.0.0.1:{server.port}/ok")
    with pytest.raises(OutboundRefused, match="resolves to a non-public"):
        OutboundGuard(resolver=lambda host, port: ["127.0.0.1"], ports=[server.port]).fetch_sync(
            f"https://loop.test:{server.port}/ok")
    with pytest.raises(OutboundRefused, match=f"port {server.port} is not one this server fetches from"):
        OutboundGuard(resolver=lambda host, port: ["127.0.0.1"]).fetch_sync(f"https://loop.test:{server.port}/ok")
    assert server.seen == []


def test_allowlisted_host_without_port_matches_any_port(servers):
    server, other = servers
    guard = OutboundGuard(allowlist=["127.0.0.1"])
    assert guard.fetch_sync(base(server) + "/ok").body == guard.fetch_sync(base(other) + "/ok").body == b"hello"


def test_connection_is_pinned_to_resolved_address(server):
    resolved = []

    def resolver(host: str, port: int) -> list[str]:
        resolved.append((host, port))
        return ["127.0.0.1"]

    guard = OutboundGuard(allowlist=[f"pinned.test:{server.port}"], resolver=resolver)
    got = guard.fetch_sync(f"http://pinned.test:{server.port}/echo")
    assert got.body.startswith(f"pinned.test:{server.port}|".encode())
    assert resolved == [("pinned.test", server.port)]


@pytest.mark.anyio
async def test_connection_is_pinned_to_resolved_address_async(server):
    guard = OutboundGuard(allowlist=[f"pinned.test:{server.port}"], resolver=lambda host, port: ["127.0.0.1"])
    got = await guard.fetch(f"http://pinned.test:{server.port}/echo")
    assert server.seen[0][1]["host"] == f"pinned.test:{server.port}" and got.status == 200


def _garbage_listener(answer: bytes) -> tuple[socket.socket, int]:
    """A TCP port that answers every connection with ``answer`` and hangs up; with no answer, it
    reads the request and resets the connection (a linger of 0 sends RST, not FIN)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                if answer:
                    conn.sendall(answer)
                else:
                    conn.recv(65536)
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


@pytest.mark.parametrize(("scheme", "answer", "reason", "french", "detail"), [
    ("http", None, "connection failed: refused by the host",
     "la connexion a échoué : refusée par l’hôte", "ConnectError"),
    ("https", b"HTTP/1.1 200 OK\r\n\r\n",
     "connection failed: no secure (TLS) connection could be made",
     "la connexion a échoué : aucune connexion sécurisée (TLS) n’a pu être établie", "SSL"),
    ("http", b"not http at all\r\n\r\n", "bad HTTP exchange", "échange HTTP invalide",
     "RemoteProtocolError"),
    ("http", b"", "connection failed: cut off by the host",
     "la connexion a échoué : coupée par l’hôte", "Connection reset"),
])
def test_a_failed_connection_is_said_in_the_servers_words_and_the_systems_go_to_the_log(
        scheme: str, answer: bytes | None, reason: str, french: str, detail: str) -> None:
    """What a person may read is the server's sentence, in their language; the OS's or TLS's
    own text (errno, OpenSSL's codes) is the exception's detail, for the operator's log."""
    from app.wording import in_language  # noqa: PLC0415

    if answer is None:  # bound, never listening: the connection is refused
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
    else:
        listener, port = _garbage_listener(answer)
    with listener, pytest.raises(OutboundRefused) as info:
        OutboundGuard(allowlist=[f"127.0.0.1:{port}"]).fetch_sync(f"{scheme}://127.0.0.1:{port}/")
    refusal = info.value
    assert (refusal.kind, refusal.reason) == ("network", reason)
    assert in_language(refusal.reason, "fr") == french
    assert detail in refusal.detail and detail in str(refusal) and detail not in refusal.reason


def test_tls_server_name_is_the_host_name_not_the_address():
    """The socket goes to 127.0.0.1, but the TLS ClientHello asks for pinned.test (SNI); the certificate check
    therefore runs against the name. A bare TCP listener captures the hello and hangs up."""
    hello = bytearray()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]

        def capture() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(2)
                hello.extend(conn.recv(4096))

        thread = threading.Thread(target=capture, daemon=True)
        thread.start()
        guard = OutboundGuard(allowlist=[f"pinned.test:{port}"], resolver=lambda host, p: ["127.0.0.1"])
        with pytest.raises(OutboundRefused, match="pinned.test refused"):
            guard.fetch_sync(f"https://pinned.test:{port}/")
        thread.join(3)
    assert hello[:1] == b"\x16" and b"pinned.test" in hello  # a TLS handshake record carrying the name


# --- stream(): the body is the caller's to read, under the same rules --------------------------------------------

@pytest.mark.anyio
async def test_stream_follows_and_rechecks_redirects_then_hands_over_the_body(server):
    async with guard_for(server).stream(base(server) + "/redirect/2") as resp:
        body = b"".join([chunk async for chunk in resp.chunks()])
    assert (resp.url, resp.status, body) == (base(server) + "/ok", 200, b"hello")
    with pytest.raises(OutboundRefused) as refused:
        async with guard_for(server).stream(f"{base(server)}/to?u=https://10.0.0.1/x"):
            raise AssertionError("a refused redirect must not reach the caller")
    assert (refused.value.kind, refused.value.reason) == ("address", "redirect from 127.0.0.1: non-public address")


@pytest.mark.anyio
async def test_stream_enforces_the_cap_on_what_the_caller_reads(server):
    received = 0
    with pytest.raises(OutboundRefused) as refused:
        async with guard_for(server).stream(base(server) + "/big-chunked", max_bytes=2000) as resp:
            async for chunk in resp.chunks():
                received += len(chunk)
    assert refused.value.kind == "size" and received <= 2000


@pytest.mark.anyio
async def test_time_the_caller_spends_between_chunks_counts_against_the_deadline(server):
    started = time.monotonic()
    with pytest.raises(OutboundRefused) as refused:
        async with guard_for(server).stream(base(server) + "/drip", total_timeout=0.6) as resp:
            async for _ in resp.chunks():
                await anyio.sleep(0.2)  # a slow consumer (disk, hashing) is the caller's time, inside the deadline
    assert refused.value.kind == "timeout" and time.monotonic() - started < 3


@pytest.mark.anyio
async def test_the_callers_own_timeout_is_not_relabelled_as_the_guards(server):
    with pytest.raises(TimeoutError):
        async with guard_for(server).stream(base(server) + "/ok"):
            raise TimeoutError("the caller's")


# -- form POST (an upstream token endpoint) ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_form_post_arrives_encoded_with_its_length_and_type(server):
    answer = await guard_for(server).post_form(base(server) + "/form", {"grant_type": "authorization_code",
                                                                        "code": "a b&c"})
    assert answer.status == 200
    assert answer.body == b"application/x-www-form-urlencoded|grant_type=authorization_code&code=a+b%26c"
    assert server.seen[-1][1]["content-length"] == str(len(b"grant_type=authorization_code&code=a+b%26c"))


@pytest.mark.anyio
async def test_a_form_post_is_never_redirected_with_its_form(servers):
    server, other = servers
    answer = await guard_for(server, allowlist=[f"127.0.0.1:{server.port}", f"127.0.0.1:{other.port}"]).post_form(
        base(server) + f"/to?u={base(other)}/form", {"client_secret": "s3cret"})
    assert answer.status == 307 and other.seen == []  # the caller gets the redirect; the secret goes nowhere


@pytest.mark.anyio
async def test_a_form_post_is_held_to_the_address_and_port_policy(server):
    with pytest.raises(OutboundRefused, match="non-public"):
        await OutboundGuard().post_form(f"https://127.0.0.1:{server.port}/form", {"a": "b"})
    with pytest.raises(OutboundRefused, match="is not one this server fetches from"):
        await OutboundGuard(resolver=lambda host, port: ["93.184.216.34"]).post_form("https://idp.example:8443/t", {})
    assert server.seen == []
