"""What the outbound guard may contact: a caller's URL parsed into the parts actually sent, allowlist entries, and
which addresses are public."""

from __future__ import annotations

import ipaddress
import re
import socket
import string
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from app.net.refusals import say

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Named even when the ranges below already cover them, so a future change to `is_global` cannot reopen them.
# 168.63.129.16 is Azure's wireserver: a public-looking address that answers only inside Azure.
_METADATA = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16")
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_HOST_RE = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")
_PRINTABLE = string.punctuation  # keep every printable ASCII char (and existing %XX); percent-encode the rest
_MAX_URL = 8192


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def non_public(addr: IPAddress) -> str | None:
    """Why this address must not be contacted, or None if it is an ordinary public address."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id:
            return say("non-public address")
        # These forms reach an IPv4 host; what matters is that host.
        embedded = addr.ipv4_mapped or addr.sixtofour
        if embedded is None and addr in _NAT64:
            embedded = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
        if embedded is not None:
            return non_public(embedded)
        if addr.is_site_local:
            return say("non-public address")
    if addr in _METADATA:
        return say("cloud metadata address")
    if (not addr.is_global or addr.is_private or addr.is_loopback or addr.is_link_local or addr.is_multicast
            or addr.is_reserved or addr.is_unspecified or addr in _SHARED):
        return say("non-public address")
    return None


def parse_ip(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def norm_host(host: str) -> str:
    return host.strip("[]").rstrip(".").lower()


def _safe_host(url: str) -> str:
    """Best-effort host of a URL for an error message: printable, short, never the path or query."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return re.sub(r"[^A-Za-z0-9.:_-]", "?", host)[:100]


@dataclass(frozen=True)
class Target:
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


def parse_url(url: str) -> Target | tuple[str, str]:
    """The URL's parts, or (host, reason) when it cannot be fetched whatever the policy."""
    host = _safe_host(url) if isinstance(url, str) else ""
    if not isinstance(url, str) or len(url) > _MAX_URL:
        return host, say("URL missing or too long")
    if _BAD_URL_CHARS.search(url):
        return host, say("URL contains spaces, control characters or backslashes")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return host, say("malformed URL or port")
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return host, say("scheme {scheme} not allowed", scheme=repr(scheme[:10]))
    if "@" in parts.netloc:
        return host, say("credentials in URL not allowed")
    raw = norm_host(parts.hostname or "")
    if not raw:
        return host, say("URL has no host")
    if parse_ip(raw) is None:
        try:
            raw = raw.encode("idna").decode("ascii")
        except UnicodeError:
            return host, say("invalid host name")
        if not _HOST_RE.fullmatch(raw):
            return host, say("invalid host name")
    elif "%" in raw:
        return host, say("scoped IPv6 address not allowed")
    if port == 0:
        return raw, say("invalid port")
    target = quote(parts.path or "/", safe=_PRINTABLE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_PRINTABLE)
    return Target(scheme, raw, port or _DEFAULT_PORTS[scheme], target)


def parse_allow(entry: str) -> tuple[str, int | None]:
    entry = entry.strip().lower()
    if entry.startswith("["):  # [v6] or [v6]:port
        host, _, rest = entry[1:].partition("]")
        return norm_host(host), int(rest[1:]) if rest.startswith(":") else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return norm_host(host), int(port)
    return norm_host(entry), None
