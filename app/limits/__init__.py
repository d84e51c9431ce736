"""How much a caller may do: every counter and budget of the server, in one place.

Counted in this process by default (one process: ``./dev serve``), and in Redis when
``APP_REDIS_URL`` is set, so that every worker of every replica shares one count. Each hit is
atomic, so concurrent requests can never get past a limit together.

- ``Limits.acquire(checks)`` counts several checks at once, or none; a ``Reservation`` can be
  given back (a sign-in that succeeded returns only its own, never resetting a count).
- ``Budget`` + ``Caller``: per-caller budgets, with the address and global levels that
  anonymous callers share (``caller.py``).
- Redis unreachable: each limit says what happens. ``strict`` ones (sign-in) refuse with
  ``LimitsUnavailable``; the others count in this process meanwhile, logged once per outage.
"""

from app.limits.caller import (
    Budget,
    Caller,
    Sharing,
    address_key,
    bind_caller,
    current_caller,
    network_key,
    unbind_caller,
)
from app.limits.checks import Check, Rate, parse_rate, per_seconds, retry_phrase, scaled
from app.limits.counters import SharedStoreRefused, check_shared_store
from app.limits.limiter import Limits, LimitsUnavailable, OverLimit, Reservation

__all__ = ["Budget", "Caller", "Check", "Limits", "LimitsUnavailable", "OverLimit", "Rate", "Reservation", "Sharing",
           "SharedStoreRefused", "address_key", "bind_caller", "check_shared_store", "current_caller", "network_key",
           "parse_rate", "per_seconds", "retry_phrase", "scaled", "unbind_caller"]
