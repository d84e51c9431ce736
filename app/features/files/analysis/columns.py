"""Per-column statistics of a table, fed a block of cells at a time.

A block is one column's cells from a few thousand rows; most work is done on the whole block by C-level
builtins (join, isdigit, map(int), min, max, sum, Counter.update), and the per-value regexes only run on the
distinct values of blocks the fast paths cannot type.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from functools import reduce

DISTINCT_CAP = 1000
COUNTER_CAP = 10_000
TOP_VALUES = 5
VALUE_CHARS = 100
NUMERIC = ("integer", "float")

# A numeric column's distribution: at most this many of its values, taken evenly across the file
# (every n-th value, n doubling as the file grows: slicing, no per-value Python), drawn in this
# many bins between its exact minimum and maximum. Bounded: a few KB per column in the analysis.
SAMPLE = 2048
BINS = 12
MAX_NUMBER_CHARS = 300
_INT = re.compile(r"[+-]?\d{1,300}", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d{1,4})?", re.ASCII)
_FLOAT_CHARS = re.compile(r"[0-9.eE+-]*")
_DATE = re.compile(
    r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
    r"(?:[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d{1,9})?)?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?",
    re.ASCII,
)
_BOOLEANS = frozenset({"true", "false", "yes", "no"})


def value_type(value: str) -> str:
    """The type of one cell: integer, float, boolean, date, string, or empty."""
    s = value.strip()
    if not s:
        return "empty" if not value else "string"
    if _INT.fullmatch(s):
        return "integer"
    if _FLOAT.fullmatch(s):
        return "float"
    if s.lower() in _BOOLEANS:
        return "boolean"
    if _DATE.fullmatch(s):
        return "date"
    return "string"


def merge_types(a: str | None, b: str | None) -> str | None:
    if a is None or a == "empty":
        return b
    if b is None or b == "empty" or a == b:
        return a
    if a in NUMERIC and b in NUMERIC:
        return "float"
    return "string"


def _classify(values: list[str], current: str | None) -> tuple[str | None, list[int] | list[float] | None]:
    """The type of a block of non-empty cells given the column's type so far, and its numbers if numeric."""
    joined = "".join(values)
    # Past a few hundred digits a "number" is an identifier or a blob (and int() refuses above 4300 digits).
    if max(map(len, values)) > MAX_NUMBER_CHARS:
        return "string", None
    if current in (None, "integer") and joined.isdigit() and joined.isascii():
        return "integer", list(map(int, values))
    if current in (None, "integer", "float") and _FLOAT_CHARS.fullmatch(joined):
        try:
            if "." in joined or "e" in joined or "E" in joined:
                return "float", list(map(float, values))
            return "integer", list(map(int, values))
        except ValueError:
            pass  # "1-2", "1.2.3", a lone "-": decided value by value below
    kind = reduce(merge_types, {value_type(v) for v in set(values)}, None)
    if kind == "integer":
        return kind, [int(v) for v in values]
    if kind == "float":
        return kind, [float(v) for v in values]
    return kind, None


class Column:
    __slots__ = ("name", "type", "non_empty", "empty", "counts", "counting", "distinct_capped",
                 "top_partial", "top_approximate", "count", "total", "low", "high", "first", "last",
                 "min_len", "max_len", "sample", "stride")

    def __init__(self, name: str) -> None:
        self.name = name
        self.type: str | None = None
        self.non_empty = 0
        self.empty = 0
        self.counts: Counter[str] = Counter()
        self.counting = True
        self.distinct_capped = False
        self.top_partial = False
        self.top_approximate = False
        self.count = 0
        self.total: int | float = 0
        # Bounds: a numeric column's, a date column's (compared as text). A column whose values
        # change family (numbers, dates) becomes a string column, which reports neither.
        self.low: int | float | None = None
        self.high: int | float | None = None
        self.first: str | None = None
        self.last: str | None = None
        self.min_len: int | None = None
        self.max_len: int | None = None
        self.sample: list = []  # numbers, or a date column's values as written
        self.stride = 1  # every stride-th value is kept

    def add(self, values: tuple[str, ...] | list[str]) -> None:
        empties = values.count("")
        if empties:
            self.empty += empties
            if empties == len(values):
                return
            values = [v for v in values if v]
        elif not isinstance(values, list):
            values = list(values)
        self.non_empty += len(values)
        if self.type != "string":
            before = self.type
            kind, numbers = _classify(values, before)
            self.type = merge_types(before, kind)
            if self.type in NUMERIC and numbers:
                self._numbers(numbers)
            elif self.type == "date":
                self._dates(min(values).strip(), max(values).strip())
                self._sample(values)
            elif self.type == "string" and not self.counting:
                # Values went uncounted while the column looked numeric: top values now cover only the rest.
                self.counting = True
                self.top_partial = True
        if self.type == "string":
            # Only text columns report lengths; one that turned to text late has them for its later blocks.
            shortest, longest = min(map(len, values)), max(map(len, values))
            if self.min_len is None or shortest < self.min_len:
                self.min_len = shortest
            if self.max_len is None or longest > self.max_len:
                self.max_len = longest
        if self.counting:
            self._count(values)

    def _sample(self, values: list) -> None:
        # The values at the column's positions that are multiples of the stride: the same sample
        # whatever the blocks' sizes (the fast and the CSV path agree).
        self.sample.extend(values[(-self.count) % self.stride::self.stride])
        if len(self.sample) > 2 * SAMPLE:  # thinned to every other one, and from now on too
            self.sample = self.sample[::2]
            self.stride *= 2
        self.count += len(values)

    def _numbers(self, numbers: list[int] | list[float]) -> None:
        self._sample(numbers)
        self.total += sum(numbers)
        low, high = min(numbers), max(numbers)
        if self.low is None or low < self.low:
            self.low = low
        if self.high is None or high > self.high:
            self.high = high

    def _dates(self, first: str, last: str) -> None:
        if self.first is None or first < self.first:
            self.first = first
        if self.last is None or last > self.last:
            self.last = last

    def _count(self, values: list[str]) -> None:
        counts = self.counts
        counts.update(values)
        if len(counts) <= DISTINCT_CAP:
            return
        self.distinct_capped = True
        if self.type not in ("string", "boolean"):
            # Past the cap only top values still need counts, and they are reported for text-like columns only.
            self.counting = False
            counts.clear()
        elif len(counts) > COUNTER_CAP:
            # Misra-Gries in spirit: values seen once go first; if that is not enough, keep the commonest half.
            kept = {v: n for v, n in counts.items() if n > 1}
            if len(kept) > COUNTER_CAP // 2:
                kept = dict(counts.most_common(COUNTER_CAP // 2))
            self.counts = Counter(kept)
            self.top_approximate = True

    def describe(self) -> dict:
        kind = self.type or "empty"
        out: dict = {"name": self.name, "type": kind, "non_empty": self.non_empty, "empty": self.empty,
                     "distinct": DISTINCT_CAP if self.distinct_capped else len(self.counts),
                     "distinct_capped": self.distinct_capped}
        if kind in NUMERIC and self.count:
            low, high = self.low, self.high
            assert low is not None and high is not None  # count > 0: _numbers has set both
            if kind == "float":  # its integer blocks' bounds are ints
                low, high = float(low), float(high)
            out["min"], out["max"] = low, high
            out["mean"] = float(f"{self.total / self.count:.6g}")
            if self.sample and high > low:
                out["histogram"] = histogram(self.sample, low, high, self.count)
        elif kind == "date":
            out["min"], out["max"] = self.first, self.last
            if self.sample and (line := timeline(self.sample, self.count)) is not None:
                out["timeline"] = line
        if kind == "string":
            out["min_length"], out["max_length"] = self.min_len, self.max_len
        if kind in ("string", "boolean"):
            approximate = self.top_partial or self.top_approximate
            # Once pruned, values seen once are noise (the last few read), not the column's commonest.
            out["top_values"] = [{"value": v if len(v) <= VALUE_CHARS else v[: VALUE_CHARS - 1] + "…", "count": n}
                                 for v, n in self.counts.most_common(TOP_VALUES) if n > 1 or not approximate]
            if approximate:
                out["top_values_approximate"] = True
        return out


def histogram(sample: list[int | float], low: float, high: float, total: int) -> dict:
    """``BINS`` equal bins over [low, high] (the last one closed), each with how many of the
    column's ``total`` values fall in it, estimated from ``sample`` when it holds fewer."""
    width = (high - low) / BINS
    counts = [0] * BINS
    for value in sample:
        counts[min(int((value - low) / width), BINS - 1)] += 1
    scale = total / len(sample)
    edges = [float(f"{low + i * width:.6g}") for i in range(BINS)] + [float(high)]
    return {"edges": edges, "counts": [round(n * scale) for n in counts],
            "sampled": len(sample) < total}


def timeline(sample: list[str], total: int) -> dict | None:
    """A date column over time: ``BINS`` equal periods between its first and last moment, each
    with how many of the column's ``total`` values fall in it (from ``sample`` as above). None when
    the values cannot be read as moments or all are the same one."""
    moments = []
    for value in sample:
        try:
            moment = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
        except ValueError:
            continue
        moments.append(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    if not moments:
        return None
    first, last = min(moments), max(moments)
    span = (last - first).total_seconds()
    if span <= 0:
        return None
    counts = [0] * BINS
    for moment in moments:
        counts[min(int((moment - first).total_seconds() / span * BINS), BINS - 1)] += 1
    dated = all(len(v.strip()) == 10 for v in sample[:50])  # dates only: no time of day shown
    edges = [first + (last - first) * i / BINS for i in range(BINS + 1)]
    said = [e.date().isoformat() if dated else e.isoformat(timespec="minutes") for e in edges]
    scale = total / len(moments)
    return {"edges": said, "counts": [round(n * scale) for n in counts],
            "sampled": len(sample) < total}
