"""Plain text: counts, line lengths and the most frequent terms, a chunk at a time."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from app.features.files.analysis.decoding import open_text
from app.features.files.analysis.model import MAX_INDEX_CHARS, MAX_SUMMARY_CHARS, Notes, Result, clip
from app.features.files.analysis.sniffing import Sniffed

CHUNK = 256 * 1024
MAX_TERMS = 50_000
TOP_TERMS = 20
# A run of text without whitespace longer than this is counted as it stands rather than held for its end.
MAX_CARRY = 1 << 20
_TERM = re.compile(r"[^\W\d_]{3,}")
STOPWORDS = frozenset("""
    about above after again against all also and any are because been before being below between both but
    can could did does doing down during each few for from further had has have having her here hers herself
    him himself his how into its itself just more most myself nor not now off once only other our ours
    ourselves out over own same she should some such than that the their theirs them themselves then there
    these they this those through too under until very was were what when where which while who whom why
    will with would you your yours yourself yourselves
""".split())


class _Counts:
    def __init__(self) -> None:
        self.characters = 0
        self.lines = 0
        self.words = 0
        self.longest = 0
        self.current = 0  # length of the line still open at the end of the last chunk
        self.last = ""
        self.terms: Counter[str] = Counter()
        self.pruned = False

    def lines_of(self, chunk: str) -> None:
        self.characters += len(chunk)
        newlines = chunk.count("\n")
        if not newlines:
            self.current += len(chunk)
        else:
            first, last = chunk.index("\n"), chunk.rindex("\n")
            self.longest = max(self.longest, self.current + first)
            if newlines > 1:
                self.longest = max(self.longest, max(map(len, chunk[first + 1: last].split("\n"))))
            self.current = len(chunk) - last - 1
            self.lines += newlines
        self.last = chunk[-1:] or self.last

    def words_of(self, text: str) -> None:
        self.words += len(text.split())
        terms = self.terms
        terms.update(_TERM.findall(text.lower()))
        if len(terms) > MAX_TERMS:
            self.terms = _prune(terms, MAX_TERMS // 2)
            self.pruned = True


def _prune(terms: Counter[str], keep: int) -> Counter[str]:
    """The commonest ``keep`` terms at most. A threshold over the sorted counts is much cheaper than
    most_common() on tens of thousands of terms; ties at the threshold go, unless that leaves too few."""
    threshold = sorted(terms.values(), reverse=True)[keep]
    kept = Counter({term: n for term, n in terms.items() if n > threshold})
    return kept if len(kept) >= keep // 2 else Counter(dict(terms.most_common(keep)))


def analyze_text(path: Path, sniffed: Sniffed, notes: Notes) -> Result:
    encoding = sniffed.encoding or "utf-8"
    counts = _Counts()
    index: list[str] = []
    index_len = 0
    carry = ""
    # Universal newlines: CRLF and CR end lines too (even split across chunks), and count as one character.
    with open_text(path, encoding, newline=None) as (stream, tally):
        while chunk := stream.read(CHUNK):
            counts.lines_of(chunk)
            if index_len < MAX_INDEX_CHARS:
                index.append(chunk[: MAX_INDEX_CHARS - index_len])
                index_len += len(index[-1])
            text = carry + chunk
            if text[-1].isspace():
                carry = ""
            else:
                # The last word may go on in the next chunk: hold it back.
                parts = text.rsplit(None, 1)
                text, carry = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
                if len(carry) > MAX_CARRY:
                    text, carry = carry, ""
            counts.words_of(text)
        counts.words_of(carry)
    if counts.characters and counts.last != "\n":
        counts.lines += 1
    counts.longest = max(counts.longest, counts.current)
    for word in STOPWORDS:
        counts.terms.pop(word, None)
    top = [{"term": t, "count": n} for t, n in counts.terms.most_common(TOP_TERMS)]
    if sniffed.guessed_encoding:
        notes.add(f"the file is not valid UTF-8; it was read as {encoding}")
    if tally.bytes:
        notes.add(f"{tally.bytes:,} byte{'s' if tally.bytes != 1 else ''} could not be decoded as {encoding} "
                  "and were replaced with U+FFFD")
    details = {"encoding": encoding, "lines": counts.lines, "words": counts.words, "characters": counts.characters,
               "longest_line": counts.longest, "top_terms": top, "top_terms_approximate": counts.pruned,
               "invalid_bytes": tally.bytes}
    summary = f"Plain text ({encoding}), {counts.lines:,} line{'s' if counts.lines != 1 else ''}, " \
              f"{counts.words:,} word{'s' if counts.words != 1 else ''}."
    if top:
        summary += " Most frequent terms: " + ", ".join(t["term"] for t in top[:8]) + "."
    return Result(details, clip(summary, MAX_SUMMARY_CHARS), "".join(index))
