"""Reading text of a sniffed encoding: undecodable bytes become U+FFFD and are counted, never fatal."""

from __future__ import annotations

import codecs
import io
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

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


REPORT_STEP = 256 * 1024  # bytes read between two reports of the analysis's position


class _Reported(io.FileIO):
    """A file whose reads report how far into it the analysis has read (the furthest position
    yet)."""

    def __init__(self, path: Path, report: Callable[[int], None]) -> None:
        super().__init__(path, "rb")
        self._report = report

    def readinto(self, buffer: Any) -> int | None:
        read = super().readinto(buffer)
        if read:
            self._report(self.tell())
        return read


@contextmanager
def reporting(progress_path: Path | None) -> Iterator[None]:
    """While it lasts, the files ``open_binary`` opens in this thread write how far they were read
    into ``progress_path`` (the analysis process's side of its progress: the server polls the
    file)."""
    if progress_path is None:
        yield
        return
    try:
        fd = os.open(progress_path, os.O_WRONLY | os.O_NOFOLLOW)
    except OSError:  # progress is a courtesy: the analysis goes on without it
        yield
        return
    furthest = written = 0
    live = True

    def report(position: int) -> None:
        nonlocal furthest, written, live
        furthest = max(furthest, position)
        if live and furthest - written >= REPORT_STEP:
            try:
                os.pwrite(fd, b"%20d" % furthest, 0)
                written = furthest
            except OSError:
                live = False

    previous = getattr(_current, "report", None)
    _current.report = report
    try:
        yield
    finally:
        _current.report = previous
        live = False  # a file still open past this point must not write to a reused descriptor
        os.close(fd)


def open_binary(path: Path) -> BinaryIO:
    """``open(path, "rb")``, reporting its reads while ``reporting`` is on."""
    report = getattr(_current, "report", None)
    if report is None:
        return open(path, "rb")
    return io.BufferedReader(_Reported(path, report))


def create_progress_file(progress_path: Path) -> None:
    """The empty file an analysis writes its position into: new (never one that was there, nor a
    link's target), private."""
    os.close(os.open(progress_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))


def read_position(progress_path: Path) -> int:
    """What the analysis process last wrote into ``progress_path`` (0 before its first report)."""
    with open(progress_path, "rb") as f:
        text = f.read(20).strip()
    return int(text) if text.isdigit() else 0


@contextmanager
def open_text(path: Path, encoding: str, newline: str | None = "") -> Iterator[tuple[io.TextIOWrapper, Tally]]:
    tally = Tally()
    previous = getattr(_current, "tally", None)
    _current.tally = tally
    try:
        with open_binary(path) as raw, io.TextIOWrapper(raw, encoding=encoding, errors=ERRORS,
                                                        newline=newline) as s:
            yield s, tally
    finally:
        _current.tally = previous


def replaced_warning(tally: Tally, encoding: str) -> str | None:
    if not tally.sequences:
        return None
    return (f"{tally.sequences:,} invalid {encoding} byte sequence{'s' if tally.sequences != 1 else ''} "
            f"({tally.bytes:,} byte{'s' if tally.bytes != 1 else ''}) replaced with U+FFFD")
