"""OutboundGuard policy, with no network at all.

Every test runs behind a tripwire: the guard's pinned backends call the base httpcore backends' ``connect_tcp``
with the checked IP, and those are replaced by a recorder that raises; raw socket connects are replaced too, as
a backstop. So even a broken guard cannot send a packet anywhere, and the recorder shows where it would have gone.
"""

from __future__ import annotations

import socket
import threading

import httpcore
import pytest

from app.net import OutboundGuard, OutboundRefused, system_resolver

BLOCKED = [
    "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.1", "192.168.1.1", "127.0.0.1", "127.5.5.5", "0.0.0.0",
    "169.254.169.254", "169.254.1.1", "100.64.0.1", "100.100.100.200", "198.18.0.1", "224.0.0.1", "239.1.2.3",
    "240.0.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00:ec2::254", "fc00::1", "ff02::1", "::ffff:10.0.0.1",
    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "2002:a00:1::", "64:ff9b::a9fe:a9fe", "2001:db8::1", "fec0::1",
]
PUBLIC = ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.fixture(autouse=True)
def tripwire(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    attempts: list[tuple[str, int]] = []

    def sync_connect(self, host, port, *args, **kwargs):
        attempts.append((host, port))
        raise httpcore.ConnectError("tripwire: no network in unit tests")

    async def async_connect(self, host, port, *args, **kwargs):
        return sync_connect(self, host, port)

    def no_socket(*args, **kwargs):
        attempts.append(("socket", 0))
        raise ConnectionRefusedError("tripwire: no network in unit tests")

    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", sync_connect)
    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", async_connect)
    monkeypatch.setattr(socket.socket, "connect", no_socket)
    monkeypatch.setattr(socket.socket, "connect_ex", no_socket)
    monkeypatch.setattr(socket, "create_connection", no_socket)
    monkeypatch.setattr(socket, "getaddrinfo", no_socket)
    return attempts


class FakeResolver:
    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table, self.calls, self.threads = table, [], []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        self.threads.append(threading.current_thread())
        if host not in self.table:
            raise socket.gaierror("unknown name")
        return self.table[host]


def no_resolver(host: str, port: int) -> list[str]:
    raise AssertionError(f"resolver must not be called for {host}")


def test_tripwire_is_armed(tripwire):
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("8.8.8.8", 443))
    with pytest.raises(httpcore.ConnectError):
        httpcore.SyncBackend().connect_tcp("8.8.8.8", 443)


# -- URL policy (no DNS) ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/", "only https"),
        ("HTTP://example.com/", "only https"),
        ("ftp://example.com/", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("https://user:pass@example.com/", "credentials"),
        ("https://user@example.com/", "credentials"),
        ("https:///path", "no host"),
        ("https://exa mple.com/", "spaces"),
        ("https://example.com\\@10.0.0.1/", "backslashes"),
        ("https://example.com:99999/", "malformed"),
        ("https://example.com:0/", "invalid port"),
        ("https://[fe80::1%25eth0]/", "scoped"),
        ("https://%31%30.0.0.1/", "invalid host"),
        ("", "scheme"),
    ],
)
def test_refusal_reasons(url, reason):
    got = OutboundGuard(resolver=no_resolver).refusal(url)
    assert got is not None and reason in got


@pytest.mark.parametrize("url", ["https://example.com/", "https://EXAMPLE.com./a?b=c", "https://xn--bcher-kva.de/",
                                 "https://bücher.de/", "https://8.8.8.8/", "https://[2606:4700:4700::1111]:443/"])
def test_refusal_accepts_public_https(url):
    assert OutboundGuard(resolver=no_resolver).refusal(url) is None


@pytest.mark.parametrize("ip", BLOCKED)
def test_refusal_blocks_ip_literals(ip):
    host = f"[{ip}]" if ":" in ip else ip
    reason = OutboundGuard(resolver=no_resolver).refusal(f"https://{host}/")
    assert reason is not None and ("non-public" in reason or "metadata" in reason)


@pytest.mark.parametrize("ip", BLOCKED)
def test_address_allowed_blocks(ip):
    assert not OutboundGuard().address_allowed(ip, "x.example", 443)


@pytest.mark.parametrize("ip", PUBLIC)
def test_address_allowed_public(ip):
    assert OutboundGuard().address_allowed(ip, "x.example", 443)


def test_address_allowed_rejects_garbage():
    assert not OutboundGuard().address_allowed("not-an-ip", "x.example", 443)


def test_metadata_addresses_are_named():
    guard = OutboundGuard(resolver=no_resolver)
    for host in ("169.254.169.254", "[fd00:ec2::254]", "100.100.100.200"):
        assert guard.refusal(f"https://{host}/latest/meta-data/") == "cloud metadata address"


# -- resolved addresses: refused before any connection ---------------------------------------------------------


@pytest.mark.parametrize("ip", BLOCKED)
def test_fetch_sync_refuses_resolved_private(ip, tripwire):
    resolver = FakeResolver({"metadata.example": [ip]})
    with pytest.raises(OutboundRefused, match="metadata.example refused: resolves to a"):
        OutboundGuard(resolver=resolver).fetch_sync("https://metadata.example/latest?token=SECRET")
    assert resolver.calls == [("metadata.example", 443)]
    assert tripwire == []


@pytest.mark.anyio
@pytest.mark.parametrize("ip", ["169.254.169.254", "fd00:ec2::254", "10.0.0.1", "::ffff:10.0.0.1", "::1"])
async def test_fetch_async_refuses_resolved_private(ip, tripwire):
    resolver = FakeResolver({"metadata.example": [ip]})
    with pytest.raises(OutboundRefused, match="resolves to a"):
        await OutboundGuard(resolver=resolver).fetch("https://metadata.example/")
    assert tripwire == []
    # The blocking resolver ran off the event loop's thread.
    assert resolver.threads and all(t is not threading.main_thread() for t in resolver.threads)


@pytest.mark.parametrize("ips", [["8.8.8.8", "10.0.0.1"], ["10.0.0.1", "8.8.8.8"], ["2606:4700::1", "fe80::1"]])
def test_one_private_address_refuses_the_lot(ips, tripwire):
    with pytest.raises(OutboundRefused, match="non-public"):
        OutboundGuard(resolver=FakeResolver({"mixed.example": ips})).fetch_sync("https://mixed.example/")
    assert tripwire == []


@pytest.mark.parametrize("answer", [[], ["not-an-ip"]])
def test_unusable_resolver_answers_refused(answer, tripwire):
    with pytest.raises(OutboundRefused):
        OutboundGuard(resolver=FakeResolver({"odd.example": answer})).fetch_sync("https://odd.example/")
    assert tripwire == []


def test_unresolvable_host_refused(tripwire):
    with pytest.raises(OutboundRefused, match="does not resolve"):
        OutboundGuard(resolver=FakeResolver({})).fetch_sync("https://nowhere.example/")
    assert tripwire == []


@pytest.mark.parametrize("ip", ["10.0.0.1", "127.0.0.1", "169.254.169.254", "::1", "::ffff:10.0.0.1"])
def test_ip_literal_private_refused_without_resolving(ip, tripwire):
    host = f"[{ip}]" if ":" in ip else ip
    with pytest.raises(OutboundRefused, match="refused"):
        OutboundGuard(resolver=no_resolver).fetch_sync(f"https://{host}/")
    assert tripwire == []


def test_ip_literal_public_connects_to_itself_without_resolving(tripwire):
    with pytest.raises(OutboundRefused, match="connection failed"):
        OutboundGuard(resolver=no_resolver).fetch_sync("https://8.8.8.8/")
    assert tripwire == [("8.8.8.8", 443)]


def test_connection_is_pinned_to_the_checked_address(tripwire):
    resolver = FakeResolver({"public.example": ["93.184.216.34"]})
    with pytest.raises(OutboundRefused, match="public.example refused: connection failed"):
        OutboundGuard(resolver=resolver, ports=[8443]).fetch_sync("https://public.example:8443/x")
    # The socket would have gone to the IP that was checked, not to the name (no second lookup to rebind).
    assert tripwire == [("93.184.216.34", 8443)]
    assert resolver.calls == [("public.example", 8443)]


@pytest.mark.anyio
async def test_async_connection_is_pinned(tripwire):
    resolver = FakeResolver({"public.example": ["93.184.216.34", "2606:4700::1"]})
    with pytest.raises(OutboundRefused, match="connection failed"):
        await OutboundGuard(resolver=resolver).fetch("https://public.example/")
    assert tripwire == [("93.184.216.34", 443), ("2606:4700::1", 443)]  # each checked address tried in turn


def test_errors_never_carry_the_query_string(tripwire):
    guard = OutboundGuard(resolver=FakeResolver({"public.example": ["8.8.8.8"], "meta.example": ["169.254.169.254"]}))
    for url in ("https://public.example/p?token=SECRET", "https://meta.example/p?token=SECRET",
                "http://public.example/p?token=SECRET", "https://u:SECRET@public.example/"):
        with pytest.raises(OutboundRefused) as info:
            guard.fetch_sync(url)
        assert "SECRET" not in str(info.value) and "\n" not in str(info.value)
        assert info.value.host.endswith(".example")


# -- allowlist -------------------------------------------------------------------------------------------------


def test_allowlisted_host_matches_any_port_and_may_use_http(tripwire):
    guard = OutboundGuard(allowlist=["Internal.Example"], resolver=FakeResolver({"internal.example": ["10.0.0.5"]}))
    assert guard.refusal("http://internal.example:8080/") is None
    assert guard.refusal("https://INTERNAL.example/") is None
    assert guard.address_allowed("10.0.0.5", "internal.example", 1234)
    with pytest.raises(OutboundRefused, match="connection failed"):
        guard.fetch_sync("http://internal.example:8080/")
    assert tripwire == [("10.0.0.5", 8080)]


def test_allowlisted_host_port_matches_only_that_port(tripwire):
    guard = OutboundGuard(allowlist=["INTERNAL.example:8443"],
                          resolver=FakeResolver({"internal.example": ["10.0.0.5"]}))
    assert guard.refusal("http://internal.example:8443/") is None
    assert guard.refusal("http://internal.example:8444/") == "only https is allowed"
    assert guard.address_allowed("10.0.0.5", "internal.example", 8443)
    assert not guard.address_allowed("10.0.0.5", "internal.example", 443)
    assert not guard.address_allowed("10.0.0.5", "other.example", 8443)
    with pytest.raises(OutboundRefused, match="resolves to a non-public"):
        guard.fetch_sync("https://internal.example/")
    assert tripwire == []


def test_allowlisted_ip_literals():
    guard = OutboundGuard(allowlist=["127.0.0.1:9000", "[::1]:9001", "10.1.2.3"], resolver=no_resolver)
    assert guard.refusal("http://127.0.0.1:9000/") is None
    assert guard.refusal("http://[::1]:9001/") is None
    assert guard.refusal("http://10.1.2.3:1/") is None
    assert guard.refusal("https://127.0.0.1:9001/") == "non-public address"
    assert guard.refusal("https://[::1]:9000/") == "non-public address"


def test_allowlist_must_be_a_sequence_of_entries():
    with pytest.raises(TypeError):
        OutboundGuard(allowlist="example.com")


# -- system resolver -------------------------------------------------------------------------------------------


def test_system_resolver_deduplicates_in_order(monkeypatch):
    calls = []

    def fake_getaddrinfo(host, port, family, type_, proto):
        calls.append((host, port, family, type_, proto))
        return [(socket.AF_INET6, type_, proto, "", ("2001:db8::1", port, 0, 0)),
                (socket.AF_INET, type_, proto, "", ("192.0.2.1", port)),
                (socket.AF_INET6, type_, proto, "", ("2001:db8::1", port, 0, 0))]

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    assert system_resolver("x.example", 443) == ["2001:db8::1", "192.0.2.1"]
    assert calls == [("x.example", 443, socket.AF_UNSPEC, socket.SOCK_STREAM, socket.IPPROTO_TCP)]


@pytest.mark.parametrize("port", [22, 25, 6379, 11211, 8443])
def test_a_port_other_than_the_webs_is_refused_before_any_connection(port):
    guard = OutboundGuard()
    refusal = guard.refusal(f"https://example.com:{port}/f")
    assert refusal == f"port {port} is not one this server fetches from (80, 443)"
    assert guard.refusal("https://example.com/f") is None and guard.refusal("https://example.com:80/f") is None
    assert OutboundGuard(ports=[443, port]).refusal(f"https://example.com:{port}/f") is None  # APP_OUTBOUND_PORTS
    assert OutboundGuard(allowlist=[f"example.com:{port}"]).refusal(f"https://example.com:{port}/f") is None


@pytest.mark.parametrize(("language", "said"), [
    ("fr", "ce serveur ne récupère rien depuis le port 22 (ports acceptés\u00a0: 80, 443)"),
    ("zh", "本服务器不从端口 22 获取内容（仅限 80, 443）"),
])
def test_a_refused_port_is_said_with_the_ports_that_are_accepted(language, said):
    from app.wording import in_language  # noqa: PLC0415

    assert in_language(OutboundGuard().refusal("https://example.com:22/f"), language) == said
