"""What a call that fetches and analyses files reports while it works (``app.mcp.progress``).

Each file counts its size twice: its bytes fetched, then its bytes analysed (how far the analysis
process has read it). So progress only grows, across phases and files, and the last report of the
call equals its total. The total is known once the last file's size is: at once for a download
that declares its length, else when it has arrived.
"""

from __future__ import annotations

from app.mcp.progress import Progress

MB = 1_000_000


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB"


class FileProgress:
    def __init__(self, progress: Progress, files: int = 1) -> None:
        self.progress = progress
        self.files = files
        self.number = 0  # the file being worked on, from 1
        self._before = 0  # the units of the files done before it

    @property
    def wanted(self) -> bool:
        return self.progress.wanted

    def next_file(self) -> None:
        self.number += 1

    def _which(self) -> str:
        return f"file {self.number} of {self.files}" if self.files > 1 else "the file"

    def _total(self, size: int | None) -> int | None:
        return self._before + 2 * size if size is not None and self.number == self.files else None

    async def fetched(self, arrived: int, declared: int | None) -> None:
        of = f" of {_mb(declared)}" if declared is not None else ""
        await self.progress.report(
            self._before + arrived,
            self._total(declared),
            f"Downloading {self._which()}: {_mb(arrived)}{of}",
        )

    async def analysed(self, position: int, size: int, *, done: bool = False) -> None:
        position = min(position, size)
        await self.progress.report(
            self._before + size + position,
            self._total(size),
            f"Analysing {self._which()}: {_mb(position)} of {_mb(size)}",
            now=done,
        )
        if done:
            self._before += 2 * size
