"""A rate (the ``limits`` notation) and one count against it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from limits import RateLimitItem, RateLimitItemPerSecond, parse_many

from app.wording import Wording

say = Wording(__file__)
Rate = RateLimitItem  # the one rate type the rest of the app names
MAX_AMOUNT = 10**12  # bytes of a storage quota included; far below what a Redis counter holds
MAX_PERIOD = 31 * 24 * 3600  # longer windows are not limits but quotas of another kind


def parse_rate(text: str) -> Rate:
    """``5/minute``, ``10 per 10 minutes``, ``100/hour``: one rate in the ``limits`` notation."""
    try:
        rates = parse_many(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a rate such as '5/minute' or '10 per 10 minutes'") from None
    if len(rates) != 1:
        raise ValueError(f"{text!r}: one rate only (not a list)")
    rate = rates[0]
    if not 1 <= rate.amount <= MAX_AMOUNT:
        raise ValueError(f"{text!r}: the amount must be 1 to {MAX_AMOUNT:,}")
    if rate.get_expiry() > MAX_PERIOD:
        raise ValueError(f"{text!r}: a window is at most 31 days")
    return rate


def per_seconds(amount: int, seconds: int) -> Rate:
    """``amount`` per ``seconds``: a rate built from settings rather than written (bounded like a written one)."""
    if not 1 <= amount <= MAX_AMOUNT or not 1 <= seconds <= MAX_PERIOD:
        raise ValueError(f"{amount} per {seconds} s is out of bounds")
    return RateLimitItemPerSecond(amount, seconds)


def describe(rate: Rate) -> str:
    """``5 per minute``, ``20 per 10 minutes``: a rate as a person writes it."""
    if rate.GRANULARITY.name == "second" and rate.multiples % 3600 == 0:
        hours = rate.multiples // 3600
        return f"{rate.amount} per {'hour' if hours == 1 else f'{hours} hours'}"
    unit = rate.GRANULARITY.name
    period = unit if rate.multiples == 1 else f"{rate.multiples} {unit}s"
    return f"{rate.amount} per {period}"


def retry_phrase(seconds: int) -> str:
    """``42 s``, ``12 min``: how long to wait, as a refusal says it (in the person's language
    where it is said to them: ``app.wording``)."""
    if seconds < 120:
        return say("{seconds} s", seconds=seconds)
    return say("{minutes} min", minutes=round(seconds / 60))


def scaled(rate: Rate, factor: int) -> Rate:
    return type(rate)(rate.amount * factor, rate.multiples)


@dataclass(frozen=True, slots=True)
class Check:
    """One count: ``cost`` against ``rate`` under ``key`` in the limit called ``name``.

    ``label`` says whose budget it is, for the refusal ("this account", "this network address").
    """

    name: str
    rate: Rate
    key: str
    label: str
    cost: int = 1

    @property
    def ident(self) -> str:
        # Names stay readable in Redis; who is counted (addresses, account names, subjects) is hashed.
        return f"{self.name}/{hashlib.blake2b(self.key.encode(), digest_size=12).hexdigest()}"
