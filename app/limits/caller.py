"""Who is counted: the caller of a tool, and how anonymous callers share their budgets.

A linked caller is its account (the token's subject), counted alone. An anonymous caller is
its client address (the trusted-proxy rule, ``app.http``), and anonymous ChatGPT users all
arrive from OpenAI's egress addresses. So an anonymous budget has three levels, each of which
must admit the call:

- the caller: the address plus ChatGPT's anonymous ``openai/subject`` (``hint``), at the budget's rate;
- the address: ``callers_per_address`` times that rate, however many hints it sends;
- every anonymous caller together: ``anonymous_callers`` times that rate.

The hint comes from the request, so it may only narrow: a new hint is a new caller-level key,
but the address and global counts are the same for every hint, so rotating it buys nothing.
"""

from __future__ import annotations

import functools
import ipaddress
from contextvars import ContextVar, Token
from dataclasses import dataclass

from app.limits.checks import Check, Rate, scaled
from app.wording import Wording

say = Wording(__file__)

_current: ContextVar[Caller | None] = ContextVar("app_limits_caller", default=None)


def address_key(host: str | None) -> str:
    """The client address as counted: IPv4 as is (IPv4-mapped IPv6 too), IPv6 by its /64, which one
    subscriber usually holds whole (counting single IPv6 addresses would let one host rotate forever)."""
    if host is not None and len(host) <= 64:  # an address: what the cache may hold is bounded
        return _address_key(host)
    return _address_key.__wrapped__(host)


# Every request asks, twice (its in-flight count, its caller): a cache turns ipaddress's 3 us
# into a lookup, at most 4096 strings of 64 characters.
@functools.lru_cache(maxsize=4096)
def _address_key(host: str | None) -> str:
    try:
        ip = ipaddress.ip_address((host or "").strip())
    except ValueError:
        return (host or "unknown")[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def network_key(host: str | None) -> str:
    """The network a client address is counted in where one party may hold many addresses: an IPv4 /24, an IPv6
    /48 (what one site is usually given). A limit per network shares a total fairly: a handful of hosts, or
    one provider's block, cannot take it all between them."""
    try:
        ip = ipaddress.ip_address((host or "").strip())
    except ValueError:
        return (host or "unknown")[:64]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if isinstance(ip, ipaddress.IPv4Address) else 48
    return str(ipaddress.ip_network((ip, prefix), strict=False))


@dataclass(frozen=True, slots=True)
class Caller:
    account: str | None  # the token's subject (or client id); None: anonymous
    address: str  # as ``address_key`` counts it
    hint: str | None = None  # ChatGPT's openai/subject: narrows an anonymous address's budget, never widens it

    @classmethod
    def of(cls, account: str | None, host: str | None, hint: object = None) -> Caller:
        return cls(account[:256] if account else None, address_key(host),
                   hint[:128] if isinstance(hint, str) and hint else None)

    @property
    def key(self) -> str:
        if self.account is not None:
            return f"acct:{self.account}"
        return f"ip:{self.address}|{self.hint or ''}"


def current_caller() -> Caller | None:
    """The caller of the tool call being served (bound by the MCP layer for each ``tools/call``)."""
    return _current.get()


def bind_caller(caller: Caller) -> Token[Caller | None]:
    return _current.set(caller)


def unbind_caller(token: Token[Caller | None]) -> None:
    _current.reset(token)


@dataclass(frozen=True, slots=True)
class Sharing:
    """How far anonymous callers share: an address carries this many callers' budgets, all anonymous callers
    together this many (``APP_LIMIT_CALLERS_PER_ADDRESS``, ``APP_LIMIT_ANONYMOUS_CALLERS``)."""

    callers_per_address: int = 20
    anonymous_callers: int = 200


@dataclass(frozen=True, slots=True)
class Budget:
    """At most ``rate`` per caller of what ``name`` counts (calls of a tool, bytes stored), levels as above."""

    name: str
    rate: Rate

    def checks(self, caller: Caller, sharing: Sharing, cost: int = 1) -> list[Check]:
        if caller.account is not None:
            return [Check(self.name, self.rate, caller.key, say("this account"), cost)]
        # The address first: a caller-level key (one per hint, which the client chooses) is only ever made
        # for a call its address admits, so no client can fill the counter with keys. The one global key last.
        return [
            Check(f"{self.name}.address", scaled(self.rate, sharing.callers_per_address), f"ip:{caller.address}",
                  say("this network address"), cost),
            Check(self.name, self.rate, caller.key, say("this caller"), cost),
            Check(f"{self.name}.anonymous", scaled(self.rate, sharing.anonymous_callers), "*",
                  say("all anonymous callers"), cost),
        ]
