"""What a file is, from its content: magic bytes, then the text encoding, then the text's structure.

The file name's extension only breaks ties between text kinds; it never overrides the content.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

import structlog

from app.features.files.analysis.columns import value_type
from app.features.files.analysis.jsonscan import scan_json
from app.features.files.analysis.jsonshape import JsonScan

log = structlog.get_logger(__name__)
HEAD_BYTES = 64 * 1024
PDF_LEAD = 1024
SAMPLE_LINES = 50
SNIFFER_CHARS = 4096
_UTF8_MULTIBYTE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]"
    rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2}"
)
_ASCII = bytes(range(128))
# Bytes that do not occur in text (NUL is handled separately); their share tells binary data from text.
_CONTROL = bytes([*range(1, 8), 0x0B, 0x0E, 0x0F, *range(0x10, 0x1B), *range(0x1C, 0x20), 0x7F])
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL)
_DELIMITERS = ",;\t|"


@dataclass(frozen=True)
class Dialect:
    delimiter: str
    quotechar: str = '"'
    doublequote: bool = True
    skipinitialspace: bool = False
    has_header: bool = True


@dataclass(frozen=True)
class Sniffed:
    kind: str
    mime_type: str
    size: int
    head: bytes
    encoding: str | None = None
    guessed_encoding: bool = False  # not UTF-8, decoded with a single-byte fallback
    dialect: Dialect | None = None
    json: JsonScan | None = None


def sniff(path: Path, file_name: str | None = None) -> tuple[str, str]:
    found = detect(Path(path), file_name)
    return found.kind, found.mime_type


def detect(path: Path, file_name: str | None = None) -> Sniffed:
    size = os.stat(path).st_size
    with open(path, "rb") as f:
        head = f.read(HEAD_BYTES)
    magic = magic_type(head)
    if magic:
        return Sniffed(magic[0], magic[1], size, head)
    if not head:
        return Sniffed("text", "text/plain", size, head, encoding="utf-8")
    complete = size <= len(head)
    encoding, guessed = text_encoding(head, complete)
    if encoding is None:
        return Sniffed("binary", "application/octet-stream", size, head)
    sample = codecs.getincrementaldecoder(encoding)(errors="replace").decode(head, final=complete)
    if not complete and "\n" in sample:
        sample = sample[: sample.rindex("\n") + 1]  # the last line may be cut short
    text = Sniffed("text", "text/plain", size, head, encoding, guessed)
    ext = PurePath(file_name or str(path)).suffix.lower()
    try:
        return _structured(path, text, sample, ext) or text
    except OSError:
        raise
    except Exception as exc:  # the structure is a refinement: a failure to find it leaves plain text
        log.warning("files.sniff_failed", error=type(exc).__name__, exc_info=exc)
        return text


def _structured(path: Path, text: Sniffed, sample: str, ext: str) -> Sniffed | None:
    if sample.lstrip("\ufeff \t\r\n")[:1] in ("{", "["):
        found = _json_kind(path, text, sample, ext)
        if found:
            return found
    dialect = csv_dialect(sample, ext)
    if dialect is None:
        return None
    mime = "text/tab-separated-values" if dialect.delimiter == "\t" else "text/csv"
    return Sniffed("csv", mime, text.size, text.head, text.encoding, text.guessed_encoding, dialect=dialect)


def magic_type(head: bytes) -> tuple[str, str] | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image", "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image", "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image", "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image", "image/webp"
    # "BM" alone starts plenty of text; the DIB header size that follows is one of a few known values.
    if head[:2] == b"BM" and int.from_bytes(head[14:18], "little") in (12, 40, 52, 56, 64, 108, 124):
        return "image", "image/bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image", "image/tiff"
    if head.find(b"%PDF-", 0, PDF_LEAD + 5) >= 0:
        return "pdf", "application/pdf"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "binary", "application/zip"
    if head[:2] == b"\x1f\x8b":
        return "binary", "application/gzip"
    return None


def text_encoding(head: bytes, complete: bool) -> tuple[str | None, bool]:
    """The encoding to read the file with, and whether it is a single-byte guess; (None, False) for binary."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", False
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32", False
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", False
    if b"\x00" in head or len(head.translate(None, _NOT_CONTROL)) > len(head) // 10:
        return None, False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=complete)
        return "utf-8", False
    except UnicodeDecodeError:
        pass
    # Mostly valid multi-byte sequences: UTF-8 with some damage, read as UTF-8 with the damage counted.
    high = len(head.translate(None, _ASCII))
    valid = sum(len(m) for m in _UTF8_MULTIBYTE.findall(head))
    if valid * 2 >= high:
        return "utf-8", False
    try:
        head.decode("cp1252")
        return "cp1252", True
    except UnicodeDecodeError:
        return "latin-1", True


def _json_kind(path: Path, text: Sniffed, sample: str, ext: str) -> Sniffed | None:
    size, head, encoding, guessed = text.size, text.head, text.encoding, text.guessed_encoding
    assert encoding is not None
    if _jsonl_sample(sample):
        return Sniffed("jsonl", "application/x-ndjson", size, head, encoding, guessed)
    scan = scan_json(path, encoding)
    if scan.ok:
        return Sniffed("json", "application/json", size, head, encoding, guessed, json=scan)
    if ext in (".jsonl", ".ndjson") or scan.error_kind == "extra" and scan.next_on_new_line:
        return Sniffed("jsonl", "application/x-ndjson", size, head, encoding, guessed)
    # Broken inside the top-level value after some of it parsed (a truncated download, a stray comma):
    # still JSON, reported with the error. "[INFO] ..." fails on its first member and stays text.
    if scan.error_kind != "extra" and (scan.members > 0 or ext == ".json"):
        return Sniffed("json", "application/json", size, head, encoding, guessed, json=scan)
    return None


def _jsonl_sample(sample: str) -> bool:
    valid = examined = 0
    for line in sample.splitlines():
        line = line.strip()
        if not line:
            continue
        examined += 1
        try:
            valid += isinstance(json.loads(line), dict | list)
        except (ValueError, RecursionError):
            pass
        if examined >= SAMPLE_LINES:
            break
    return valid >= 2 and valid * 10 >= examined * 9


def csv_dialect(sample: str, ext: str) -> Dialect | None:
    """The dialect, if the sample reads as a table; csv.Sniffer proposes, consistent rows decide."""
    # csv.Sniffer's quote-guessing regexes take time quadratic in the sample (seconds for 16 KB of ', "x'):
    # it sees whole lines from the first few KB only.
    head = sample[:SNIFFER_CHARS]
    head = head[: head.rfind("\n") + 1]
    try:
        sniffed = csv.Sniffer().sniff(head, delimiters=_DELIMITERS) if head else None
    except csv.Error:
        sniffed = None
    preferred = "\t" if ext == ".tsv" else ","
    order = [d for d in (sniffed.delimiter if sniffed else "", preferred, *_DELIMITERS) if d]
    for delimiter in dict.fromkeys(order):
        # The sniffed dialect, when this is its delimiter.
        own = sniffed if sniffed is not None and delimiter == sniffed.delimiter else None
        quotechar = own.quotechar if own is not None and own.quotechar else '"'
        skip = bool(own.skipinitialspace) if own is not None else False
        rows = _sample_rows(sample, delimiter, quotechar, skip)
        if _consistent(rows) and (ext in (".csv", ".tsv") or not _prose(rows)):
            return Dialect(delimiter, quotechar, True, skip, _has_header(rows))
    if ext in (".csv", ".tsv"):
        rows = _sample_rows(sample, preferred, '"', False)
        return Dialect(preferred, '"', True, False, _has_header(rows) if rows else True)
    return None


def _sample_rows(sample: str, delimiter: str, quotechar: str, skip: bool) -> list[list[str]]:
    rows: list[list[str]] = []
    try:
        for row in csv.reader(io.StringIO(sample), delimiter=delimiter, quotechar=quotechar,
                              skipinitialspace=skip):
            if row:
                rows.append(row)
                if len(rows) >= SAMPLE_LINES:
                    break
    except csv.Error:
        pass
    return rows


def _consistent(rows: list[list[str]]) -> bool:
    """At least two rows, of two or more fields, nearly all as wide as the first."""
    if len(rows) < 2 or len(rows[0]) < 2:
        return False
    width = len(rows[0])
    return sum(len(r) == width for r in rows) * 5 >= len(rows) * 4


def _prose(rows: list[list[str]]) -> bool:
    """Sentences with one comma each also split into two even columns; table cells are rarely that wordy."""
    if len(rows[0]) > 2:
        return False
    fields = [f for r in rows for f in r]
    return sum(len(f.split()) for f in fields) >= 3 * len(fields)


def _has_header(rows: list[list[str]]) -> bool:
    """A vote per column: a text cell above typed data says header, a cell typed like the data says not.

    A table of text only cannot tell; a header is then assumed, as most exported tables have one.
    """
    if len(rows) < 2:
        return True
    first, rest = rows[0], rows[1:21]
    votes = 0
    for i, cell in enumerate(first):
        below = {value_type(r[i]) for r in rest if i < len(r)} - {"empty"}
        if len(below) != 1 or below == {"string"}:
            continue
        top = value_type(cell)
        if top == "string":
            votes += 1
        elif top in below or {top} | below == {"integer", "float"}:
            votes -= 1
    return votes >= 0
