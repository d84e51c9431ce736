"""The analysis result, and the limits every analyser keeps to whatever the file."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import NamedTuple

from app.text import storable_text

KINDS = ("text", "csv", "json", "jsonl", "image", "pdf", "binary")
MAX_INDEX_CHARS = 200_000
MAX_SUMMARY_CHARS = 600
MAX_WARNING_CHARS = 200
MAX_WARNINGS = 20
# Kept below the 256 KB promised to callers, so the trimming pass never has to be exact.
MAX_DETAILS_BYTES = 240_000


@dataclass(frozen=True)
class Analysis:
    kind: str
    mime_type: str
    summary: str
    details: dict
    warnings: list[str] = field(default_factory=list)
    text: str = ""


class Result(NamedTuple):
    """What one kind's analyser returns; ``analyze`` adds the kind, the MIME type and the warnings."""

    details: dict
    summary: str
    text: str = ""


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Notes:
    """The warnings of one analysis: short, de-duplicated, and few however broken the file is."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._items: list[str] = []
        self._more = 0

    def add(self, message: str) -> None:
        message = clip(" ".join(storable_text(message).split()), MAX_WARNING_CHARS)
        if message in self._seen:
            return
        if len(self._items) < MAX_WARNINGS:
            self._seen.add(message)
            self._items.append(message)
        else:
            self._more += 1

    def __bool__(self) -> bool:
        return bool(self._items)

    def as_list(self) -> list[str]:
        if not self._more:
            return list(self._items)
        kept = self._items[: MAX_WARNINGS - 1]
        return [*kept, f"... and {len(self._items) - len(kept) + self._more} more"]


def plain(value: object, list_limit: int | None = None, str_limit: int | None = None) -> object:
    """A copy made only of JSON types (finite floats, str keys), optionally with long lists and strings cut."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        value = storable_text(value)
        return value if str_limit is None else clip(value, str_limit)
    if isinstance(value, dict):
        items = list(value.items())
        if list_limit is not None:
            items = items[:list_limit]
        return {storable_text(str(k)) if str_limit is None else clip(storable_text(str(k)), str_limit):
                plain(v, list_limit, str_limit) for k, v in items}
    if isinstance(value, list | tuple | set | frozenset):
        seq = list(value)
        if list_limit is not None:
            seq = seq[:list_limit]
        return [plain(v, list_limit, str_limit) for v in seq]
    return plain(str(value), list_limit, str_limit)


def fit_details(details: dict, notes: Notes) -> dict:
    """The details as plain JSON under MAX_DETAILS_BYTES: cut lists and strings harder until they fit."""
    result = plain(details)
    assert isinstance(result, dict)
    if len(json.dumps(result)) <= MAX_DETAILS_BYTES:
        return result
    for list_limit, str_limit in ((500, 2000), (200, 1000), (100, 400), (50, 200), (20, 100), (5, 40), (1, 10)):
        trimmed = plain(details, list_limit, str_limit)
        assert isinstance(trimmed, dict)
        if len(json.dumps(trimmed)) <= MAX_DETAILS_BYTES:
            notes.add("the details were too large and were shortened (long lists and strings cut)")
            return trimmed
    notes.add("the details were too large to keep")
    return {"bytes": details.get("bytes")}
