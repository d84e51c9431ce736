"""Locale negotiation: RFC 4647 §3.4 "lookup" over the languages a feature ships."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def lookup(ranges: str | Iterable[str] | None, supported: Iterable[str], default: str = "en") -> str:
    """Return the best of ``supported`` (the caller's own languages) for a language range or priority list.

    Each range is truncated from the right, one subtag at a time, until it
    matches; a single-letter subtag (``x``, ``u``...) is dropped with the one
    after it, as RFC 4647 requires. ``*`` and unparseable input fall to the default.
    """
    available = {tag.lower(): tag for tag in supported}
    if ranges is None:
        return default
    items = [r for r in (ranges.split(",") if isinstance(ranges, str) else ranges)]
    for item in items:
        tag = item.split(";")[0].strip().replace("_", "-").lower()
        if not tag or tag == "*" or len(tag) > 64:
            continue
        subtags = tag.split("-")
        while subtags:
            candidate = "-".join(subtags)
            if candidate in available:
                return available[candidate]
            subtags.pop()
            if subtags and len(subtags[-1]) == 1:
                subtags.pop()
    return default


def requested_locale(meta: Mapping[str, Any] | None) -> str | None:
    """The locale ChatGPT asked for in request ``_meta`` (``webplus/i18n`` on older clients)."""
    if not meta:
        return None
    for key in ("openai/locale", "webplus/i18n"):
        value = meta.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def by_quality(accept_language: str) -> list[str]:
    """Accept-Language ranges, highest q first (ties keep header order); q=0 and malformed q
    dropped."""
    ranked: list[tuple[float, str]] = []
    for item in accept_language[:4096].split(","):
        tag, _, params = item.partition(";")
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if tag.strip() and 0.0 < quality <= 1.0:
            ranked.append((quality, tag.strip()))
    ranked.sort(key=lambda pair: -pair[0])
    return [tag for _, tag in ranked]
