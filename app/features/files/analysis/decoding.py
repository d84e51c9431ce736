"""Reading text of a sniffed encoding: undecodable bytes become U+FFFD and are counted, never fatal."""

from __future__ import annotations

import codecs
import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ERRORS = "app.files.analysis.count-replace"
_current = threading.local()


@dataclass
class Tally:
    sequences: int = 0
    bytes: int = 0


def _count_and_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    # Error handlers are registered process-wide by name; the tally of the reading thread is the one to bump.
    tally = getattr(_current, "tally", None)
    if tally is not None:
        tally.sequences += 1
        tally.bytes += exc.end - exc.start
    return "\ufffd", exc.end


codecs.register_error(ERRORS, _count_and_replace)


@contextmanager
def open_text(path: Path, encoding: str, newline: str | None = "") -> Iterator[tuple[io.TextIOWrapper, Tally]]:
    tally = Tally()
    previous = getattr(_current, "tally", None)
    _current.tally = tally
    try:
        with open(path, "rb") as raw, io.TextIOWrapper(raw, encoding=encoding, errors=ERRORS, newline=newline) as s:
            yield s, tally
    finally:
        _current.tally = previous


def replaced_warning(tally: Tally, encoding: str) -> str | None:
    if not tally.sequences:
        return None
    return (f"{tally.sequences:,} invalid {encoding} byte sequence{'s' if tally.sequences != 1 else ''} "
            f"({tally.bytes:,} byte{'s' if tally.bytes != 1 else ''}) replaced with U+FFFD")
