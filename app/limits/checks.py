"""A rate (the ``limits`` notation) and one count against it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from limits import RateLimitItem, parse


def parse_rate(text: str) -> RateLimitItem:
    """``5/minute``, ``10 per 10 minutes``, ``100/hour``: one rate in the ``limits`` notation."""
    try:
        rate = parse(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a rate such as '5/minute' or '10 per 10 minutes'") from None
    if rate.amount < 1:
        raise ValueError(f"{text!r}: the amount must be at least 1")
    return rate


def describe(rate: RateLimitItem) -> str:
    """``5 per minute``, ``20 per 10 minutes``: a rate as a person writes it."""
    unit = rate.GRANULARITY.name
    period = unit if rate.multiples == 1 else f"{rate.multiples} {unit}s"
    return f"{rate.amount} per {period}"


def scaled(rate: RateLimitItem, factor: int) -> RateLimitItem:
    return type(rate)(rate.amount * factor, rate.multiples)


@dataclass(frozen=True, slots=True)
class Check:
    """One count: ``cost`` against ``rate`` under ``key`` in the limit called ``name``.

    ``label`` says whose budget it is, for the refusal ("this account", "this network address").
    """

    name: str
    rate: RateLimitItem
    key: str
    label: str
    cost: int = 1

    @property
    def ident(self) -> str:
        # Names stay readable in Redis; who is counted (addresses, account names, subjects) is hashed.
        return f"{self.name}/{hashlib.blake2b(self.key.encode(), digest_size=12).hexdigest()}"
