"""CSV and TSV: dialect, header, and per-column types and statistics, in one streaming pass.

The text is read in blocks that end at a line end. A block without a quote character, whose lines all have
the header's number of delimiters, is split with str methods (what csv.reader would return, at a fraction of
the cost); any other block goes line by line through one csv.reader that lives for the whole file, so a quoted
field spanning blocks is read whole. Cells are kept as one flat list per block, never one list per row.
"""

from __future__ import annotations

import csv
import io
import re
from collections import deque
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path

from app.features.files.analysis.columns import Column
from app.features.files.analysis.decoding import open_text, replaced_warning
from app.features.files.analysis.model import MAX_INDEX_CHARS, MAX_SUMMARY_CHARS, Notes, Result, clip
from app.features.files.analysis.sniffing import Dialect, Sniffed

CHUNK = 256 * 1024
FIELD_LIMIT = 1 << 20
LINE_LIMIT = 4 << 20
MAX_COLUMNS = 200
NAME_CHARS = 100
# Cells held before they are handed to the columns: bounds memory whatever the shape of the table.
BLOCK_CELLS = 50_000
MAX_ERRORS = 1000
_LINE_END = re.compile(r"\r\n?|\n")
_SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}


class _Blocks:
    """The text of a stream in blocks that end at a line end; a line too long to hold is skipped."""

    def __init__(self, stream: io.TextIOBase) -> None:
        self._read = stream.read
        self._carry = ""
        self._skipping = False
        self.overlong = 0
        self.index: list[str] = []
        self.index_len = 0

    def next(self) -> str | None:
        while True:
            chunk = self._read(CHUNK)
            if not chunk:
                block, self._carry = self._carry, ""
                return None if self._skipping or not block else block
            if self.index_len < MAX_INDEX_CHARS:
                self.index.append(chunk[: MAX_INDEX_CHARS - self.index_len])
                self.index_len += len(self.index[-1])
            text = self._carry + chunk
            if self._skipping:
                first = _LINE_END.search(text)
                if not first:
                    continue
                self._skipping = False
                text = text[first.end():]
            end = max(text.rfind("\n"), text.rfind("\r")) + 1
            if not end:
                if len(text) > LINE_LIMIT:
                    self.overlong += 1
                    self._skipping, self._carry = True, ""
                else:
                    self._carry = text
                continue
            self._carry = text[end:]
            return text[:end]


def analyze_csv(path: Path, sniffed: Sniffed, notes: Notes) -> Result:
    dialect = sniffed.dialect or Dialect(",")
    encoding = sniffed.encoding or "utf-8"
    if csv.field_size_limit() < FIELD_LIMIT:
        csv.field_size_limit(FIELD_LIMIT)
    with open_text(path, encoding) as (stream, tally):
        blocks = _Blocks(stream)
        table = _Table(dialect, blocks)
        table.read()
    if sniffed.guessed_encoding:
        notes.add(f"the file is not valid UTF-8; it was read as {encoding}")
    if message := replaced_warning(tally, encoding):
        notes.add(message)
    if blocks.overlong:
        notes.add(f"{blocks.overlong:,} line(s) longer than {LINE_LIMIT >> 20} MB were skipped")
    if table.errors:
        notes.add(f"{table.errors:,} CSV parse error(s), e.g. {table.first_error}; those records were skipped")
    if table.ragged:
        notes.add(f"{table.ragged:,} rows have a different number of fields than the header "
                  f"(e.g. row {table.first_ragged:,})")
    if table.width > MAX_COLUMNS:
        notes.add(f"only the first {MAX_COLUMNS} of {table.width:,} columns are described")
    if not table.columns:
        notes.add("no rows could be read")
    columns = [c.describe() for c in table.columns]
    label = "TSV" if dialect.delimiter == "\t" else "CSV"
    separator = _SEPARATORS.get(dialect.delimiter, repr(dialect.delimiter))
    details = {
        "encoding": encoding, "delimiter": dialect.delimiter, "quotechar": dialect.quotechar,
        "has_header": dialect.has_header, "rows": table.rows, "column_count": table.width,
        "ragged_rows": table.ragged, "columns": columns,
    }
    return Result(details, _summary(label, separator, table.rows, table.width, columns), "".join(blocks.index))


def _summary(label: str, separator: str, rows: int, width: int, columns: list[dict]) -> str:
    head = f"{label}, {rows:,} row{'s' if rows != 1 else ''} × {width:,} column{'s' if width != 1 else ''} " \
           f"({separator}-separated)"
    shown: list[str] = []
    for c in columns:
        part = f"{clip(c['name'], 40)} ({c['type']})"
        if len(head) + len(", ".join([*shown, part])) + 24 > MAX_SUMMARY_CHARS:
            break
        shown.append(part)
    if shown and len(shown) < width:
        shown.append(f"and {width - len(shown):,} more")
    return clip(f"{head}: {', '.join(shown)}." if shown else f"{head}.", MAX_SUMMARY_CHARS)


class _Table:
    def __init__(self, dialect: Dialect, blocks: _Blocks) -> None:
        self.dialect = dialect
        self.blocks = blocks
        self.columns: list[Column] = []
        self.width = 0
        self.rows = 0
        self.ragged = 0
        self.first_ragged = 0
        self.errors = 0
        self.first_error = ""
        self.cells: list[str] = []
        self._pending: deque[str] = deque()
        self._reader = csv.reader(self._lines(), delimiter=dialect.delimiter, quotechar=dialect.quotechar,
                                  doublequote=dialect.doublequote, skipinitialspace=dialect.skipinitialspace)
        self._ended = False

    def _lines(self) -> Iterator[str]:
        """Lines for the csv reader; past the queued ones (a quoted field going on), the next block's."""
        pending = self._pending
        while True:
            while pending:
                yield pending.popleft()
            block = self.blocks.next()
            if block is None:
                self._ended = True
                return
            pending.extend(io.StringIO(block, newline=""))

    def read(self) -> None:
        header = self._next_row()
        if header is None:
            return
        self.width = width = len(header)
        shown = min(width, MAX_COLUMNS)
        if self.dialect.has_header:
            names = [clip(n.strip(), NAME_CHARS) or f"column_{i + 1}" for i, n in enumerate(header[:shown])]
        else:
            names = [f"column_{i + 1}" for i in range(shown)]
            self.cells.extend(header)
            self.rows += 1
        self.columns = [Column(n) for n in names]
        self._drain()
        delimiter = self.dialect.delimiter
        simple = width > 1 and not self.dialect.skipinitialspace
        while not self._ended and (block := self.blocks.next()) is not None:
            if simple and (cells := _split(block, delimiter, self.dialect.quotechar, width)) is not None:
                self._flush()
                self.rows += len(cells) // width
                self.cells = cells
                self._flush()
            else:
                self._pending.extend(io.StringIO(block, newline=""))
                self._drain()
        self._flush()

    def _next_row(self) -> list[str] | None:
        while True:
            try:
                for row in self._reader:
                    if row:
                        return row
                return None
            except csv.Error as exc:
                if not self._error(exc):
                    return None

    def _drain(self) -> None:
        """Parse the queued lines; a record still open at their end pulls in the following blocks."""
        width, cells = self.width, self.cells
        while self._pending:
            row = self._next_row()
            if row is None:
                return
            if len(row) != width:
                row = self._ragged(row, width)
            cells.extend(row)
            self.rows += 1
            if len(cells) >= BLOCK_CELLS:
                self._flush()
                cells = self.cells

    def _error(self, exc: csv.Error) -> bool:
        """Note a record csv could not parse; False when there are too many to go on."""
        self.errors += 1
        if self.errors == 1:
            self.first_error = f"after data row {self.rows:,}: {exc}"
        return self.errors < MAX_ERRORS

    def _ragged(self, row: list[str], width: int) -> list[str]:
        self.ragged += 1
        self.first_ragged = self.first_ragged or self.rows + 1
        return row[:width] if len(row) > width else row + [""] * (width - len(row))

    def _flush(self) -> None:
        cells, width = self.cells, self.width
        if not cells:
            return
        for j, column in enumerate(self.columns):
            column.add(cells[j::width])
        self.cells = []


def _split(block: str, delimiter: str, quotechar: str, width: int) -> list[str] | None:
    """The cells of a block, row after row, if it is plain (no quoting, no blank line, every row full width)."""
    if quotechar in block:
        return None
    if "\r" in block:
        block = block.replace("\r\n", "\n")
        if "\r" in block:
            return None
    lines = block.split("\n")
    if lines[-1]:
        return None
    del lines[-1]
    if set(map(str.count, lines, repeat(delimiter))) != {width - 1}:
        return None
    return block[:-1].replace("\n", delimiter).split(delimiter)
