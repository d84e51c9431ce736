"""File analysis: sniffing by content, per-kind figures, limits that hold whatever the file, and no exceptions
for bad content. Every fixture is generated in tmp_path."""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import json
import random
import struct
import time
import tracemalloc
import warnings
import zipfile
import zlib
from pathlib import Path

import pytest
from PIL import Image, ImageFile, PngImagePlugin
from pypdf import PdfReader, PdfWriter

from app.features.files.analysis import (
    KINDS,
    MAX_INDEX_CHARS,
    Analysis,
    analyze,
    compare,
    jsonscan,
    plaintext,
    sniff,
    tabular,
)
from app.features.files.analysis.model import Notes
from app.features.files.analysis.pdfs import XFORM_INVOCATIONS
from tests.filesamples import flate_pdf

pytestmark = pytest.mark.demo("files")


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


def png_bytes(size: tuple[int, int] = (100, 80), mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    Image.new(mode, size, "red" if mode == "RGB" else None).save(out, "PNG")
    return out.getvalue()


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def crafted_png(width: int, height: int, idat: bytes) -> bytes:
    """A PNG with a valid header declaring any size, and whatever pixel data."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", idat)
            + png_chunk(b"IEND", b""))


def pdf_bytes(pages: list[str], title: str = "Quarterly Report", author: str = "Ada Lovelace") -> bytes:
    """A minimal valid PDF: a catalog, a page tree, Helvetica, an /Info dictionary, one content stream a page,
    and a cross-reference table with exact offsets."""
    page_ids = [5 + 2 * i for i in range(len(pages))]
    objects = {
        1: "<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] /Count {len(pages)} >>",
        3: "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        4: f"<< /Title ({title}) /Author ({author}) /CreationDate (D:20240102030405Z) >>",
    }
    for i, text in enumerate(pages):
        page, content = 5 + 2 * i, 6 + 2 * i
        objects[page] = ("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                         f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content} 0 R >>")
        stream = f"BT /F1 24 Tf 72 700 Td ({text}) Tj ET"
        objects[content] = f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream"
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n{objects[number]}\nendobj\n".encode("latin-1")
    xref, size = len(out), max(objects) + 1
    out += f"xref\n0 {size}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offsets[n]:010d} 00000 n \n" for n in range(1, size)).encode()
    out += f"trailer\n<< /Size {size} /Root 1 0 R /Info 4 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def column(analysis: Analysis, name: str) -> dict:
    return next(c for c in analysis.details["columns"] if c["name"] == name)


def assert_well_formed(analysis: Analysis) -> None:
    assert analysis.kind in KINDS
    assert len(analysis.summary) <= 600
    assert len(json.dumps(analysis.details, allow_nan=False)) < 256 * 1024
    assert len(analysis.warnings) <= 20 and all(len(w) <= 200 for w in analysis.warnings)
    assert len(analysis.text) <= MAX_INDEX_CHARS
    assert isinstance(analysis.details["bytes"], int)


# -- sniffing --------------------------------------------------------------------------------------------------


def test_sniff_trusts_magic_bytes_over_a_lying_csv_extension(tmp_path):
    path = write(tmp_path, "data.csv", png_bytes())
    assert sniff(path) == ("image", "image/png")
    assert sniff(path, "data.csv") == ("image", "image/png")
    assert analyze(path, file_name="data.csv").kind == "image"


def test_sniff_reads_a_csv_named_png_as_csv(tmp_path):
    path = write(tmp_path, "x.png", "a,b\n1,2\n3,4\n")
    assert sniff(path, "x.png") == ("csv", "text/csv")
    assert analyze(path, file_name="x.png").details["rows"] == 2


@pytest.mark.parametrize(("content", "expected"), [
    (b"GIF89a" + b"\x00" * 20, ("image", "image/gif")),
    (b"\xff\xd8\xff\xe0" + b"\x00" * 20, ("image", "image/jpeg")),
    (b"RIFF\x00\x00\x00\x00WEBPVP8 ", ("image", "image/webp")),
    (b"II*\x00" + b"\x00" * 20, ("image", "image/tiff")),
    (b"junk before the header\n" * 10 + b"%PDF-1.7\n", ("pdf", "application/pdf")),
    (b"\x1f\x8b\x08\x00" + b"\x00" * 20, ("binary", "application/gzip")),
    (bytes(range(256)), ("binary", "application/octet-stream")),
    (b"BMW,price\nX5,50000\nM3,70000\n", ("csv", "text/csv")),  # "BM" without a DIB header is not a bitmap
    (b'{"a": 1}\n{"a": 2}\n', ("jsonl", "application/x-ndjson")),
    (b"[INFO] started\n[INFO] stopped\n", ("text", "text/plain")),
    (b"just some words\n", ("text", "text/plain")),
])
def test_sniff_decides_by_content(tmp_path, content, expected):
    assert sniff(write(tmp_path, "file.bin", content)) == expected


def test_pdf_magic_more_than_1024_bytes_in_is_not_a_pdf(tmp_path):
    path = write(tmp_path, "late.txt", "x" * 1100 + "%PDF-1.4\n")
    assert sniff(path)[0] == "text"


def test_extension_breaks_a_tie_between_text_kinds_only(tmp_path):
    one_column = "name\nalice\nbob\n"
    assert sniff(write(tmp_path, "names.txt", one_column))[0] == "text"
    assert sniff(write(tmp_path, "names.csv", one_column))[0] == "csv"


def test_sniffing_text_that_defeats_csv_sniffer_stays_fast(tmp_path):
    # csv.Sniffer alone needs tens of seconds on 64 KB of this; it only ever sees the first few KB.
    path = write(tmp_path, "q.txt", ', "x' * 16_000 + "\n" + ', "x' * 16_000)
    started = time.perf_counter()
    assert sniff(path) == ("text", "text/plain")  # one ragged "column" per line: not a table
    assert time.perf_counter() - started < 5


# -- CSV -------------------------------------------------------------------------------------------------------


def test_csv_types_and_statistics_are_exact_for_a_small_table(tmp_path):
    path = write(tmp_path, "t.csv", (
        "id,price,name,active,day,note,mixed\n"
        "1,2.5,apple,true,2024-01-15,,1\n"
        "2,3,banana,False,2024-02-01,,2.5\n"
        "3,,apple,yes,2023-12-31,,x\n"
        "4,4.25,cherry,NO,2024-03-10T12:30:00,,4\n"
    ))
    a = analyze(path)
    assert (a.kind, a.mime_type) == ("csv", "text/csv")
    assert a.warnings == []
    d = a.details
    assert (d["delimiter"], d["quotechar"], d["has_header"], d["encoding"], d["rows"]) == (",", '"', True, "utf-8", 4)
    # Twelve bins between the exact bounds (the last one closed), each value counted once.
    id_bins = {"edges": [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0],
               "counts": [1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1], "sampled": False}
    assert column(a, "id") == {"name": "id", "type": "integer", "non_empty": 4, "empty": 0, "distinct": 4,
                               "distinct_capped": False, "min": 1, "max": 4, "mean": 2.5,
                               "histogram": id_bins}
    price = column(a, "price")
    assert price.pop("histogram")["counts"] == [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]
    assert price == {"name": "price", "type": "float", "non_empty": 3, "empty": 1, "distinct": 3,
                     "distinct_capped": False, "min": 2.5, "max": 4.25, "mean": 3.25}
    assert column(a, "name") == {"name": "name", "type": "string", "non_empty": 4, "empty": 0, "distinct": 3,
                                 "distinct_capped": False, "min_length": 5, "max_length": 6,
                                 "top_values": [{"value": "apple", "count": 2}, {"value": "banana", "count": 1},
                                                {"value": "cherry", "count": 1}]}
    assert column(a, "active")["type"] == "boolean"
    assert column(a, "active")["distinct"] == 4
    day = column(a, "day")
    assert (day["type"], day["min"], day["max"]) == ("date", "2023-12-31", "2024-03-10T12:30:00")
    assert column(a, "note") == {"name": "note", "type": "empty", "non_empty": 0, "empty": 4, "distinct": 0,
                                 "distinct_capped": False}
    assert column(a, "mixed")["type"] == "string"
    assert a.summary.startswith("CSV, 4 rows × 7 columns (comma-separated): id (integer), price (float), name (string)")
    assert a.text.startswith("id,price,name")


def test_csv_mean_is_rounded_to_six_significant_digits(tmp_path):
    a = analyze(write(tmp_path, "m.csv", "v,w\n1.0,1\n2.0,1\n2.0,2\n"))
    assert column(a, "v")["mean"] == 1.66667
    assert column(a, "w")["mean"] == 1.33333


def test_integers_then_floats_make_a_float_column_and_other_mixes_a_string_column(tmp_path, monkeypatch):
    monkeypatch.setattr(tabular, "CHUNK", 997)  # the change of type comes blocks after the start
    rows = [f"{i},{i},{i}" for i in range(1, 1001)] + [f"{i}.5,{i},2024-01-01" for i in range(1001, 1101)]
    rows[-1] = "1100.5,n/a,2024-01-01"
    a = analyze(write(tmp_path, "m.csv", "f,s,d\n" + "\n".join(rows) + "\n"))
    f = column(a, "f")
    assert (f["type"], f["min"], f["max"], f["mean"]) == ("float", 1.0, 1100.5, 550.545)  # 605,600 / 1,100
    assert (column(a, "s")["type"], column(a, "d")["type"]) == ("string", "string")


def test_distinct_counts_are_capped_at_1000(tmp_path):
    rows = "".join(f"{i},v{i % 1500},same\n" for i in range(3000))
    a = analyze(write(tmp_path, "d.csv", "n,s,c\n" + rows))
    assert (column(a, "n")["distinct"], column(a, "n")["distinct_capped"]) == (1000, True)
    assert (column(a, "s")["distinct"], column(a, "s")["distinct_capped"]) == (1000, True)
    assert column(a, "c")["top_values"] == [{"value": "same", "count": 3000}]
    assert column(a, "n")["max"] == 2999


@pytest.mark.parametrize(("text", "delimiter", "mime"), [
    ("a\tb\tc\n1\tx y\t3\n4\tz\t6\n", "\t", "text/tab-separated-values"),
    ("a;b;c\n1,5;x;3\n4,5;z;6\n", ";", "text/csv"),
    ('a|b\n"p|q"|2\nr|3\n', "|", "text/csv"),
])
def test_tsv_semicolon_and_pipe_dialects(tmp_path, text, delimiter, mime):
    a = analyze(write(tmp_path, "d.txt", text))
    assert (a.kind, a.mime_type, a.details["delimiter"], a.details["rows"]) == ("csv", mime, delimiter, 2)
    assert a.details["column_count"] == len(text.splitlines()[0].split(delimiter))
    assert ("TSV" if delimiter == "\t" else "CSV") in a.summary


def test_invalid_utf8_csv_gives_a_partial_result_and_counts_the_replacements(tmp_path):
    content = "name,city\nJosé,Málaga\n".encode() + b"Ann,Z\xfcrich\nBob,\xff\xfeX\n"
    a = analyze(write(tmp_path, "bad.csv", content))
    assert (a.kind, a.details["encoding"], a.details["rows"]) == ("csv", "utf-8", 3)
    assert a.warnings == ["3 invalid utf-8 byte sequences (3 bytes) replaced with U+FFFD"]
    assert {"value": "Z\ufffdrich", "count": 1} in column(a, "city")["top_values"]


def test_invalid_utf8_after_the_sniffed_head_is_counted_too(tmp_path):
    rows = "".join(f"{i},é{i}\n" for i in range(20_000)).encode()
    a = analyze(write(tmp_path, "late.csv", b"id,v\n" + rows + b"20000,\xff\n"))
    assert a.details["rows"] == 20_001
    assert a.warnings == ["1 invalid utf-8 byte sequence (1 byte) replaced with U+FFFD"]


def test_a_single_byte_encoded_csv_is_read_as_cp1252_and_says_so(tmp_path):
    a = analyze(write(tmp_path, "cp.csv", "name;city\nJosé;Málaga\nAnn;Zürich\n".encode("cp1252")))
    assert (a.kind, a.details["encoding"], a.details["delimiter"]) == ("csv", "cp1252", ";")
    assert column(a, "city")["top_values"][0]["value"] == "Málaga"
    assert a.warnings == ["the file is not valid UTF-8; it was read as cp1252"]


def test_a_utf16_csv_with_a_bom_is_decoded(tmp_path):
    a = analyze(write(tmp_path, "u.csv", "name,city\nJosé,São Paulo\nAnn,Zürich\n".encode("utf-16")))
    assert (a.kind, a.details["encoding"], a.details["rows"]) == ("csv", "utf-16", 2)
    assert column(a, "city")["top_values"][0]["value"] == "São Paulo"


def test_ragged_rows_are_counted_warned_and_analysed_up_to_the_header_width(tmp_path):
    a = analyze(write(tmp_path, "r.csv", "a,b,c\n1,2,3\n4,5\n6,7,8,9\n10,11,12\n13,14,15\n16,17,18\n"))
    assert a.details["rows"] == 6
    assert a.details["ragged_rows"] == 2
    assert a.warnings == ["2 rows have a different number of fields than the header (e.g. row 2)"]
    assert (column(a, "c")["non_empty"], column(a, "c")["empty"], column(a, "c")["max"]) == (5, 1, 18)


def test_quoted_fields_spanning_read_blocks_match_the_csv_module(tmp_path, monkeypatch):
    monkeypatch.setattr(tabular, "CHUNK", 37)  # blocks end inside quoted fields again and again
    rnd = random.Random(7)
    out = io.StringIO()
    rows = [["id", "text", "n"]]
    for i in range(400):
        text = rnd.choice(["plain", 'say "hi"', "a,b", "two\nlines", "", "x" * rnd.randint(1, 80)])
        rows.append([str(i), text, str(rnd.randint(-5, 5))])
    csv.writer(out, lineterminator="\n").writerows(rows)
    a = analyze(write(tmp_path, "q.csv", out.getvalue()))
    assert a.details["rows"] == 400
    assert a.warnings == []
    assert column(a, "n")["type"] == "integer"
    assert column(a, "id")["max"] == 399
    expected_texts = {r[1] for r in rows[1:] if r[1]}
    assert column(a, "text")["distinct"] == len(expected_texts)


def test_the_plain_fast_path_and_the_csv_path_agree(tmp_path, monkeypatch):
    monkeypatch.setattr(tabular, "CHUNK", 997)  # many blocks: all but the first may take the fast path
    body = "a,b,c\n" + "".join(f"{i},{i * 0.5},{'x' if i % 3 else ''}\n" for i in range(5000))
    fast = analyze(write(tmp_path, "fast.csv", body))
    monkeypatch.setattr(tabular, "_split", lambda *args: None)
    slow = analyze(write(tmp_path, "slow.csv", body))
    assert fast.details == slow.details


def test_a_numeric_columns_distribution_is_sampled_evenly_and_bounded(tmp_path, monkeypatch):
    """A large column: its histogram comes from at most 2 x SAMPLE of its values, taken evenly
    (every n-th), scaled to the column's count; the same whatever the blocks' sizes."""
    monkeypatch.setattr(tabular, "CHUNK", 1009)
    body = "v\n" + "".join(f"{i % 120}\n" for i in range(30_000))
    a = analyze(write(tmp_path, "many.csv", body))
    bins = column(a, "v")["histogram"]
    assert bins["sampled"] is True and len(bins["counts"]) == 12 and len(bins["edges"]) == 13
    assert (bins["edges"][0], bins["edges"][-1]) == (0.0, 119.0)
    assert abs(sum(bins["counts"]) - 30_000) <= 12  # rounding, one per bin at most
    assert max(bins["counts"]) - min(bins["counts"]) <= 0.05 * 2_500  # uniform values, even bins


def test_a_date_column_is_counted_over_time(tmp_path):
    days = [f"2024-{m:02d}-{d:02d}" for m in range(1, 13) for d in (1, 11, 21)]
    times = ["2024-05-01T08:00:00Z", "2024-05-01T20:00:00+00:00", "2024-05-02 08:00"]
    a = analyze(write(tmp_path, "dates.csv", "day,when\n" + "".join(
        f"{d},{times[i % 3]}\n" for i, d in enumerate(days))))
    line = column(a, "day")["timeline"]
    assert line["edges"][0] == "2024-01-01" and line["edges"][-1] == "2024-12-21"
    assert sum(line["counts"]) == 36 and min(line["counts"]) >= 2 and line["sampled"] is False
    when = column(a, "when")["timeline"]  # times of day shown, zones read
    assert (when["edges"][0], when["edges"][-1]) == ("2024-05-01T08:00+00:00",
                                                     "2024-05-02T08:00+00:00")
    assert when["counts"][0] == 12 and when["counts"][-1] == 12


def test_ragged_rows_in_plain_blocks_are_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(tabular, "CHUNK", 997)
    lines = [f"{i},{i},{i}" if i % 500 else f"{i},{i}" for i in range(1, 5001)]
    a = analyze(write(tmp_path, "r.csv", "a,b,c\n" + "\n".join(lines) + "\n"))
    assert (a.details["rows"], a.details["ragged_rows"]) == (5000, 10)
    assert (column(a, "c")["non_empty"], column(a, "c")["empty"]) == (4990, 10)


def test_a_field_over_the_size_limit_is_a_warning_not_a_crash(tmp_path):
    content = 'a,b\n1,"' + "x\n" * (tabular.FIELD_LIMIT // 2 + 1000) + '"\n2,ok\n'
    a = analyze(write(tmp_path, "big.csv", content))
    assert a.kind == "csv"
    assert any("CSV parse error" in w for w in a.warnings)


def test_a_csv_without_a_header_gets_column_names(tmp_path):
    a = analyze(write(tmp_path, "n.csv", "1,2,3\n4,5,6\n7,8,9\n"))
    assert a.details["has_header"] is False
    assert [c["name"] for c in a.details["columns"]] == ["column_1", "column_2", "column_3"]
    assert a.details["rows"] == 3


def test_crlf_line_ends_and_blank_lines(tmp_path):
    a = analyze(write(tmp_path, "w.csv", b"a,b\r\n1,2\r\n\r\n3,4\r\n"))
    assert (a.details["rows"], column(a, "b")["max"]) == (2, 4)


def test_csv_memory_stays_bounded_for_a_30_mb_file(tmp_path):
    block = "".join(f"{i},{i * 7919 % 100003}.{i % 997:03d},{(i * 31) % 1_000_003 / 7:.6f},label{i % 50}\n"
                    for i in range(20_000))
    path = tmp_path / "big.csv"
    with path.open("w") as f:
        f.write("id,amount,ratio,label\n")
        while f.tell() < 30_000_000:
            f.write(block)
    tracemalloc.start()
    try:
        a = analyze(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert a.kind == "csv" and a.warnings == []
    assert a.details["rows"] == path.read_text().count("\n") - 1
    assert peak < 20_000_000, f"peak {peak / 1e6:.1f} MB"


# -- JSON ------------------------------------------------------------------------------------------------------


def test_json_object_structure(tmp_path):
    doc = {"name": "x", "n": 3, "ok": True, "none": None, "tags": ["a", "b"], "meta": {"deep": [{"v": 1.5}]}}
    a = analyze(write(tmp_path, "o.json", json.dumps(doc, indent=2)))
    assert (a.kind, a.mime_type, a.warnings) == ("json", "application/json", [])
    d = a.details
    assert (d["valid"], d["top_level_type"], d["key_count"], d["depth"]) == (True, "object", 6, 4)
    assert d["keys"] == [{"key": "name", "type": "string"}, {"key": "n", "type": "number"},
                         {"key": "ok", "type": "boolean"}, {"key": "none", "type": "null"},
                         {"key": "tags", "type": "array"}, {"key": "meta", "type": "object"}]
    assert d["counts"] == {"objects": 3, "arrays": 2, "strings": 3, "numbers": 2, "booleans": 1, "nulls": 1}
    assert a.summary.startswith("JSON: an object with 6 keys (name, n, ok, none, tags, meta)")


def test_json_array_structure_with_element_keys(tmp_path):
    doc = [{"id": 1, "tag": "a"}, {"id": 2.5, "extra": None}, "loose", [1, 2]]
    a = analyze(write(tmp_path, "a.json", json.dumps(doc)))
    d = a.details
    assert (d["top_level_type"], d["length"], d["depth"]) == ("array", 4, 2)
    assert d["element_types"] == {"object": 2, "string": 1, "array": 1}
    assert d["element_keys"] == [{"key": "id", "count": 2, "types": {"number": 2}},
                                 {"key": "tag", "count": 1, "types": {"string": 1}},
                                 {"key": "extra", "count": 1, "types": {"null": 1}}]


def test_invalid_json_gives_a_partial_result_with_line_and_column(tmp_path):
    a = analyze(write(tmp_path, "bad.json", '{\n  "a": 1,\n  "b": [1, 2,, 3]\n}\n'))
    assert (a.kind, a.details["valid"], a.details["key_count"]) == ("json", False, 2)
    assert a.details["keys"][0] == {"key": "a", "type": "number"}
    assert a.warnings == ["invalid JSON at line 3, column 14: Expecting value; the figures describe the part "
                          "before it"]
    assert a.summary.startswith("Invalid JSON")


def test_truncated_json_is_reported_as_json_with_an_error(tmp_path):
    a = analyze(write(tmp_path, "cut.json", '{"users": [{"id": 1}, {"id": 2}, {"id": '))
    assert (a.kind, a.details["valid"]) == ("json", False)
    assert "unexpected end of data" in a.warnings[0]


def test_a_large_json_array_is_streamed_with_exact_counts(tmp_path):
    path = tmp_path / "big.json"
    with path.open("w") as f:
        f.write("[\n")
        for i in range(60_000):
            sep = ",\n" if i else ""
            f.write(sep + json.dumps({"id": i, "name": f"item {i}", "tags": ["a", "b"], "price": i / 7,
                                      "ok": i % 2 == 0, "none": None, "pad": "p" * 20}))
        f.write("\n]\n")
    assert path.stat().st_size > 6_000_000
    tracemalloc.start()
    try:
        a = analyze(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    d = a.details
    assert (a.kind, d["valid"], d["length"]) == ("json", True, 60_000)
    assert d["counts"] == {"objects": 60_000, "arrays": 60_001, "strings": 60_000 * 4, "numbers": 120_000,
                           "booleans": 60_000, "nulls": 60_000}
    assert d["element_keys"][0] == {"key": "id", "count": 60_000, "types": {"number": 60_000}}
    # json.load of this file would hold well over 30 MB of objects; the stream holds a window.
    assert peak < 8_000_000, f"peak {peak / 1e6:.1f} MB"


def test_json_members_larger_than_the_window_are_entered(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonscan, "WINDOW", 64)
    monkeypatch.setattr(jsonscan, "CHUNK", 16)
    doc = {"meta": {"v": 1}, "rows": [[i, {"k": "v" * (i % 30)}] for i in range(200)], "tail": [True, None]}
    a = analyze(write(tmp_path, "nested.json", json.dumps(doc)))
    d = a.details
    assert (d["valid"], d["depth"], d["key_count"]) == (True, 4, 3)
    assert d["counts"] == {"objects": 202, "arrays": 202, "strings": 200, "numbers": 201, "booleans": 1, "nulls": 1}


def test_numbers_cut_by_read_boundaries_are_read_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonscan, "CHUNK", 3)
    monkeypatch.setattr(jsonscan, "WINDOW", 5)
    numbers = [1.5e-3, -12.25, 123456789, 7, 0.5, -1e10, 42]
    a = analyze(write(tmp_path, "n.json", json.dumps({"v": numbers, "w": 12.75})))
    assert (a.details["valid"], a.details["counts"]["numbers"]) == (True, len(numbers) + 1)


def test_deep_nesting_stops_at_the_depth_limit_without_recursion_error(tmp_path):
    a = analyze(write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000))
    assert (a.kind, a.details["valid"], a.details["depth"]) == ("json", False, jsonscan.MAX_DEPTH)
    assert "nesting deeper than 512 levels" in a.warnings[0]


def test_jsonl_with_one_bad_line(tmp_path):
    lines = ['{"id": 1, "name": "a"}', '{"id": 2, "name": null}', "{oops", "", '{"id": 3, "extra": [1]}', "[1, 2]"]
    a = analyze(write(tmp_path, "events.jsonl", "\n".join(lines) + "\n"))
    assert (a.kind, a.mime_type) == ("jsonl", "application/x-ndjson")
    d = a.details
    assert (d["records"], d["invalid_lines"], d["invalid_line_numbers"], d["blank_lines"]) == (4, 1, [3], 1)
    assert d["record_types"] == {"object": 3, "array": 1}
    assert d["keys"] == [{"key": "id", "count": 3, "types": {"number": 3}},
                         {"key": "name", "count": 2, "types": {"string": 1, "null": 1}},
                         {"key": "extra", "count": 1, "types": {"array": 1}}]
    assert a.warnings == ["1 line is not valid JSON (line 3)"]


# -- text ------------------------------------------------------------------------------------------------------


def test_text_counts_and_top_terms_are_exact(tmp_path):
    text = ("The data pipeline reads data files. Data files feed the pipeline!\n"
            "Analysis of data: the analysis runs nightly.\n"
            "\n"
            "Pipeline, pipeline, data.")
    a = analyze(write(tmp_path, "notes.txt", text))
    d = a.details
    assert (a.kind, a.mime_type, a.warnings) == ("text", "text/plain", [])
    assert (d["lines"], d["words"], d["characters"], d["bytes"]) == (4, 21, len(text), len(text))
    assert d["longest_line"] == len("The data pipeline reads data files. Data files feed the pipeline!")
    assert d["top_terms"][:5] == [{"term": "data", "count": 5}, {"term": "pipeline", "count": 4},
                                  {"term": "files", "count": 2}, {"term": "analysis", "count": 2},
                                  {"term": "reads", "count": 1}]
    assert all(t["term"] not in plaintext.STOPWORDS for t in d["top_terms"])
    assert a.text == text


def test_text_read_in_small_chunks_gives_the_same_counts(tmp_path, monkeypatch):
    text = "".join(f"line {i} has some words, like alpha{i % 7} and beta\r\n" for i in range(300))
    whole = analyze(write(tmp_path, "a.txt", text)).details
    monkeypatch.setattr(plaintext, "CHUNK", 7)
    assert analyze(write(tmp_path, "b.txt", text)).details == whole
    assert (whole["lines"], whole["words"]) == (300, 300 * 9)


def test_the_term_counter_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(plaintext, "MAX_TERMS", 100)
    words = " ".join(f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676)}" for i in range(5000))
    a = analyze(write(tmp_path, "many.txt", ("common " * 50) + words))
    assert a.details["top_terms_approximate"] is True
    assert a.details["top_terms"][0] == {"term": "common", "count": 50}


def test_undecodable_bytes_in_text_are_counted(tmp_path):
    a = analyze(write(tmp_path, "t.txt", "héllo wörld ".encode() * 3 + b"\xff\xfe end\n"))
    assert (a.kind, a.details["invalid_bytes"]) == ("text", 2)
    assert a.warnings == ["2 bytes could not be decoded as utf-8 and were replaced with U+FFFD"]


def test_index_text_is_capped(tmp_path):
    a = analyze(write(tmp_path, "long.txt", "word " * 100_000))
    assert len(a.text) == MAX_INDEX_CHARS
    assert a.details["words"] == 100_000


# -- images ----------------------------------------------------------------------------------------------------


def test_png_dimensions_and_mode(tmp_path):
    a = analyze(write(tmp_path, "p.png", png_bytes((100, 80), "RGBA")))
    assert (a.kind, a.mime_type, a.warnings, a.text) == ("image", "image/png", [], "")
    d = a.details
    assert (d["format"], d["width"], d["height"], d["mode"], d["has_alpha"], d["frames"], d["decoded"]) == \
           ("PNG", 100, 80, "RGBA", True, 1, True)


def test_a_decoded_image_has_a_small_preview_of_its_colours(tmp_path):
    picture = Image.new("RGB", (120, 60), "white")
    picture.paste((0, 0, 255), (0, 0, 60, 60))  # left half blue
    out = io.BytesIO()
    picture.save(out, "PNG")
    preview = analyze(write(tmp_path, "half.png", out.getvalue())).details["preview"]
    assert (preview["width"], preview["height"]) == (24, 12)
    rgb = base64.b64decode(preview["rgb"])
    assert len(rgb) == 24 * 12 * 3
    assert rgb[:3] == bytes((0, 0, 255)) and rgb[23 * 3:24 * 3] == bytes((255, 255, 255))
    transparent = analyze(write(tmp_path, "clear.png", png_bytes((10, 10), "RGBA")))
    assert base64.b64decode(transparent.details["preview"]["rgb"])[:3] == b"\xff\xff\xff"  # on white


def test_animated_gif_frames_and_jpeg_dpi(tmp_path):
    frames = [Image.new("RGB", (20, 10), c) for c in ("red", "green", "blue")]
    gif = io.BytesIO()
    frames[0].save(gif, "GIF", save_all=True, append_images=frames[1:], duration=100)
    jpeg = io.BytesIO()
    Image.new("RGB", (64, 32), "blue").save(jpeg, "JPEG", dpi=(300, 300))
    assert analyze(write(tmp_path, "a.gif", gif.getvalue())).details["frames"] == 3
    d = analyze(write(tmp_path, "a.jpg", jpeg.getvalue())).details
    assert (d["format"], d["width"], d["dpi"], d["decoded"]) == ("JPEG", 64, [300.0, 300.0], True)


def test_a_png_over_the_pixel_limit_is_not_decoded(tmp_path):
    a = analyze(write(tmp_path, "p.png", png_bytes((100, 100))), max_pixels=1000)
    assert (a.kind, a.details["width"], a.details["height"], a.details["decoded"]) == ("image", 100, 100, False)
    assert a.warnings == ["image declares 100×100 pixels, more than the limit of 1,000: not decoded"]


def test_a_decompression_bomb_header_is_refused_before_any_decoding(tmp_path, monkeypatch):
    def no_decoding(self, *args, **kwargs):
        raise AssertionError("pixels were decoded")

    monkeypatch.setattr(ImageFile.ImageFile, "load", no_decoding)
    monkeypatch.setattr(PngImagePlugin.PngImageFile, "verify", no_decoding)
    path = write(tmp_path, "bomb.png", crafted_png(100_000, 100_000, b"\x00not zlib at all"))
    before = Image.MAX_IMAGE_PIXELS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = analyze(path)
    assert Image.MAX_IMAGE_PIXELS == before
    assert (a.kind, a.details["width"], a.details["height"], a.details["decoded"]) == ("image", 100_000, 100_000, False)
    assert a.warnings == ["image declares 100,000×100,000 pixels, more than the limit of 50,000,000: not decoded"]


def test_pillows_global_limit_neither_blocks_nor_warns(tmp_path, monkeypatch):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # Image.open would raise on 100×100 now
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = analyze(write(tmp_path, "p.png", png_bytes((100, 100))))
    assert (a.details["decoded"], a.warnings) == (True, [])


def test_a_corrupt_png_within_the_limit_is_reported(tmp_path):
    a = analyze(write(tmp_path, "c.png", crafted_png(50, 50, b"\x00not zlib at all")))
    assert (a.kind, a.details["width"], a.details["decoded"]) == ("image", 50, False)
    assert a.warnings == ["image data is truncated or corrupt"]


def test_a_truncated_png_is_reported(tmp_path):
    noisy = io.BytesIO()
    Image.effect_noise((200, 200), 60).convert("RGB").save(noisy, "PNG")
    data = noisy.getvalue()
    a = analyze(write(tmp_path, "t.png", data[: len(data) // 2]))
    assert (a.kind, a.details["width"], a.details["height"], a.details["decoded"]) == ("image", 200, 200, False)
    assert a.warnings == ["image data is truncated or corrupt"]


def test_an_unreadable_image_header_is_a_warning(tmp_path):
    a = analyze(write(tmp_path, "h.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 5))
    assert (a.kind, a.details["format"], a.details["decoded"]) == ("image", "PNG", False)
    assert a.warnings[0].startswith("the image header could not be read")


# -- PDF -------------------------------------------------------------------------------------------------------


def test_pdf_pages_metadata_and_text(tmp_path):
    a = analyze(write(tmp_path, "r.pdf", pdf_bytes(["Hello first page", "Second page text"])))
    assert (a.kind, a.mime_type, a.warnings) == ("pdf", "application/pdf", [])
    d = a.details
    assert (d["pages"], d["encrypted"]) == (2, False)
    assert d["metadata"] == {"title": "Quarterly Report", "author": "Ada Lovelace",
                             "creation_date": "D:20240102030405Z"}
    assert d["first_pages_text"] == ["Hello first page", "Second page text"]
    assert a.text == "Hello first page\n\nSecond page text"
    assert a.summary == "PDF document, 2 pages, titled “Quarterly Report”."


def test_pdf_text_is_taken_from_the_first_pages_only(tmp_path):
    a = analyze(write(tmp_path, "r.pdf", pdf_bytes(["One", "Two", "Three"])), pdf_text_pages=2)
    assert (a.details["pages"], a.details["first_pages_text"]) == (3, ["One", "Two"])


def test_a_pdf_truncated_to_half_gives_a_partial_result(tmp_path):
    data = pdf_bytes(["Hello first page", "Second page text"])
    a = analyze(write(tmp_path, "half.pdf", data[: len(data) // 2]))
    assert a.kind == "pdf"
    assert a.warnings and a.warnings[0].startswith("the PDF could not be read")
    assert a.details["metadata"] == {"title": "Quarterly Report"}
    assert a.details["page_objects_found"] == 1


def test_a_failing_page_keeps_the_pages_before_it(tmp_path, monkeypatch):
    from pypdf import PageObject

    original = PageObject.extract_text

    def extract(self, *args, **kwargs):
        if "Two" in original(self):
            raise RecursionError("pathological content stream")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PageObject, "extract_text", extract)
    a = analyze(write(tmp_path, "r.pdf", pdf_bytes(["One", "Two", "Three"])))
    assert a.details["first_pages_text"] == ["One", "", "Three"]
    assert a.warnings == ["the text of page 2 could not be extracted: RecursionError: pathological content stream"]


def test_a_password_protected_pdf_is_reported_without_text(tmp_path):
    writer = PdfWriter()
    for page in PdfReader(io.BytesIO(pdf_bytes(["Secret"]))).pages:
        writer.add_page(page)
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    a = analyze(write(tmp_path, "e.pdf", out.getvalue()))
    assert (a.kind, a.details["encrypted"], a.text) == ("pdf", True, "")
    assert a.warnings == ["the PDF is encrypted with a password: its text and metadata were not read"]


TEXT_LINE = b"BT /F1 12 Tf 72 712 Td (hello world) Tj ET\n"


@pytest.fixture
def tokenised(monkeypatch) -> list[int]:
    """The size of every content stream pypdf tokenises (its costly step), one a tokenisation."""
    from pypdf.generic import ContentStream

    sizes: list[int] = []
    original = ContentStream._parse_content_stream

    def parse(self, stream):
        sizes.append(stream.seek(0, 2))
        return original(self, stream)

    monkeypatch.setattr(ContentStream, "_parse_content_stream", parse)
    return sizes


def test_pages_sharing_a_content_stream_have_it_tokenised_once(tmp_path, tokenised):
    # The shape of a 13 KB PDF that cost 80 s: every page draws the same large deflated stream.
    stream = TEXT_LINE * 1500  # 64 KiB: five tokenisations would still fit the content cap
    a = analyze(write(tmp_path, "shared.pdf", flate_pdf([stream], ["S0"] * 5)))
    texts = a.details["first_pages_text"]
    assert (a.details["pages"], a.warnings) == (5, [])
    assert texts[0].startswith("hello world") and texts == [texts[0]] * 5
    assert a.text.count("hello world") == 5 * 1500
    assert tokenised == [len(stream)]


def test_pages_drawing_the_same_streams_through_other_arrays_share_their_text(tmp_path, tokenised):
    streams = [b"BT /F1 12 Tf 72 712 Td (first) Tj ET", b"BT /F1 12 Tf 72 600 Td (second) Tj ET"]
    contents = ["[S0 S1]", "[S0 S1]", "S1", "[S1]", "[S1 S0]"]
    a = analyze(write(tmp_path, "arrays.pdf", flate_pdf(streams, contents)))
    assert a.warnings == []
    assert a.details["first_pages_text"] == ["first\nsecond", "first\nsecond", "second", "second",
                                             "second\nfirst"]
    assert len(tokenised) == 3  # [S0 S1], S1 and [S1] alike, [S1 S0]


def test_a_stream_shared_by_pages_that_fails_fails_once_for_each(tmp_path, monkeypatch):
    from pypdf import PageObject

    calls = []

    def extract(self, *args, **kwargs):
        calls.append(self)
        raise RecursionError("pathological content stream")

    monkeypatch.setattr(PageObject, "extract_text", extract)
    a = analyze(write(tmp_path, "shared.pdf", flate_pdf([TEXT_LINE], ["S0", "S0"])))
    assert (a.details["first_pages_text"], len(calls)) == (["", ""], 1)
    assert a.warnings == [f"the text of page {n} could not be extracted: "
                          "RecursionError: pathological content stream" for n in (1, 2)]


def test_the_shared_stream_bomb_is_not_tokenised(tmp_path, tokenised):
    stream = TEXT_LINE * (5_000_000 // len(TEXT_LINE))
    data = flate_pdf([stream], ["S0"] * 5)
    assert len(data) < 30_000
    a = analyze(write(tmp_path, "bomb.pdf", data))
    assert (a.details["pages"], a.details["first_pages_text"], tokenised) == (5, [""] * 5, [])
    assert a.warnings == ["the text of pages 1-5 was not extracted: their content is beyond "
                          "the 512 KiB this analysis reads"]
    assert a.summary == ("PDF document, 5 pages. "
                         "Its first pages have no extractable text (scanned images?).")


def test_distinct_content_streams_are_read_up_to_the_cap(tmp_path, monkeypatch, tokenised):
    from app.features.files.analysis import pdfs

    monkeypatch.setattr(pdfs, "MAX_CONTENT_BYTES", 64 << 10)  # the logic of 512 KiB, in less time
    # 20 KiB each, none alike
    streams = [TEXT_LINE * 480 + b"%" + bytes([48 + i]) for i in range(5)]
    a = analyze(write(tmp_path, "distinct.pdf", flate_pdf(streams, [f"S{i}" for i in range(5)])))
    texts = a.details["first_pages_text"]
    assert a.details["pages"] == 5 and all(texts[:3]) and texts[3:] == ["", ""]
    assert a.warnings == ["the text of pages 4-5 was not extracted: their content is beyond "
                          "the 64 KiB this analysis reads"]
    assert tokenised == [len(s) for s in streams[:3]] and sum(tokenised) <= 64 << 10


def test_a_single_page_past_the_cap_is_named_alone(tmp_path, monkeypatch, tokenised):
    from app.features.files.analysis import pdfs

    monkeypatch.setattr(pdfs, "MAX_CONTENT_BYTES", 1 << 20)
    data = flate_pdf([TEXT_LINE, TEXT_LINE * 30_000], ["S0", "S1"])  # 44 bytes, then 1.26 MiB
    a = analyze(write(tmp_path, "big.pdf", data))
    assert a.details["first_pages_text"] == ["hello world", ""]
    assert a.warnings == ["the text of page 2 was not extracted: its content is beyond "
                          "the 1 MiB this analysis reads"]
    assert tokenised == [len(TEXT_LINE)]


def test_an_ordinary_multi_page_pdf_is_read_whole(tmp_path, tokenised):
    a = analyze(write(tmp_path, "r.pdf", pdf_bytes(["One", "Two", "Three", "Four"])))
    assert a.details["first_pages_text"] == ["One", "Two", "Three", "Four"]
    assert (a.warnings, len(tokenised)) == ([], 4)


# -- binary, empty, limits -------------------------------------------------------------------------------------


def test_binary_blob_sha256_matches_hashlib(tmp_path):
    blob = random.Random(1).randbytes(3_000_000)
    a = analyze(write(tmp_path, "blob.dat", blob))
    assert (a.kind, a.mime_type, a.text) == ("binary", "application/octet-stream", "")
    d = a.details
    assert d["sha256"] == hashlib.sha256(blob).hexdigest()
    assert (d["bytes"], d["first_bytes_hex"], d["type_guess"]) == (3_000_000, blob[:16].hex(), "unknown binary data")


def test_zip_and_gzip_are_detected(tmp_path):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.csv", "a,b\n1,2\n")
    a = analyze(write(tmp_path, "a.csv", archive.getvalue()))
    assert (a.kind, a.mime_type, a.details["type_guess"]) == ("binary", "application/zip", "ZIP archive")
    g = analyze(write(tmp_path, "b.txt", gzip.compress(b"hello")))
    assert (g.kind, g.mime_type, g.details["type_guess"]) == ("binary", "application/gzip", "gzip data")


def test_an_empty_file_is_sensible(tmp_path):
    a = analyze(write(tmp_path, "empty.csv", b""))
    assert (a.kind, a.details["bytes"], a.text) == ("text", 0, "")
    assert a.warnings == ["file is empty"]
    assert a.summary == "Empty file (0 bytes)."


def test_a_missing_path_raises_oserror(tmp_path):
    with pytest.raises(OSError):
        analyze(tmp_path / "nope.csv")


def test_details_stay_bounded_for_a_very_wide_table(tmp_path):
    names = ",".join(f"列{i}" + "名" * 120 for i in range(3000))
    rows = "\n".join(",".join("値" * 150 + str(r * 3000 + c) for c in range(3000)) for r in range(3))
    a = analyze(write(tmp_path, "wide.csv", names + "\n" + rows + "\n"))
    assert_well_formed(a)
    assert a.details["column_count"] == 3000
    assert "only the first 200 of 3,000 columns are described" in a.warnings


def test_warnings_are_capped_with_a_count_of_the_rest():
    notes = Notes()
    for i in range(25):
        notes.add(f"problem {i} " + "x" * 300)
    listed = notes.as_list()
    assert len(listed) == 20 and all(len(w) <= 200 for w in listed)
    assert listed[-1] == "... and 6 more"


@pytest.mark.parametrize("content", [
    b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
    b"%PDF-1.4\n" + bytes(range(256)) * 4,
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 1 0 R >> endobj trailer << /Root 1 0 R >> startxref 9 %%EOF",
    b"GIF89a\xff\xff\xff\xff" + b"\x00" * 100,
    b"\xff\xd8\xff\xe0" + b"\xff" * 300,
    b'{"a": [1, 2, {"b": "\\x"}]}',
    b'[1, 2, "unterminated',
    b'{"a": 1e999999, "b": -}',
    b'"a","b\n"1,2\n',
    b"a,b\n" + b"\x00\x01" * 10,
])
def test_bad_content_never_raises(tmp_path, content):
    assert_well_formed(analyze(write(tmp_path, "x", content)))


def test_every_kind_gives_plain_json_details(tmp_path):
    files = {
        "t.txt": b"hello world\n", "c.csv": b"a,b\n1,2\n", "j.json": b'{"a": [1.5, null]}',
        "l.jsonl": b'{"a": 1}\n{"a": 2}\n', "p.png": png_bytes(), "d.pdf": pdf_bytes(["Hi"]),
        "b.bin": bytes(range(256)),
    }
    kinds = set()
    for name, content in files.items():
        a = analyze(write(tmp_path, name, content))
        assert_well_formed(a)
        assert json.loads(json.dumps(a.details)) == a.details
        kinds.add(a.kind)
    assert kinds == set(KINDS)


# -- compare ---------------------------------------------------------------------------------------------------


def test_compare_lines_up_tables(tmp_path):
    a = analyze(write(tmp_path, "a.csv", "id,name,price\n1,x,2.5\n2,y,3\n"))
    b = analyze(write(tmp_path, "b.csv", "id,price,stock\n1,cheap,4\n"))
    t = analyze(write(tmp_path, "n.txt", "notes\n"))
    result = compare([("a.csv", a), ("b.csv", b), ("n.txt", t)])
    assert result["files"] == [
        {"label": "a.csv", "kind": "csv", "mime_type": "text/csv", "bytes": a.details["bytes"], "rows": 2},
        {"label": "b.csv", "kind": "csv", "mime_type": "text/csv", "bytes": b.details["bytes"], "rows": 1},
        {"label": "n.txt", "kind": "text", "mime_type": "text/plain", "bytes": 6},
    ]
    assert result["tabular"] == {
        "shared_columns": ["id", "price"],
        "only_in": {"a.csv": ["name"], "b.csv": ["stock"]},
        "type_conflicts": [{"column": "price", "types": {"a.csv": "float", "b.csv": "string"}}],
        "rows": {"a.csv": 2, "b.csv": 1},
    }
    assert result["summary"] == "Compared 3 files: 2 CSV, 1 text. The 2 tables share 2 columns, 1 of them with " \
                                "different types."


def test_compare_without_two_tables_has_no_tabular_part_and_unique_labels(tmp_path):
    t = analyze(write(tmp_path, "n.txt", "notes\n"))
    result = compare([("n.txt", t), ("n.txt", t)])
    assert "tabular" not in result
    assert [f["label"] for f in result["files"]] == ["n.txt", "n.txt (2)"]


def test_a_form_drawn_many_times_is_entered_only_so_often(tmp_path, tokenised):
    # 1.2 KB drawing one 100 KiB form 50 times: 7.8 s when pypdf entered it each time (5,000 allowed).
    form = zlib.compress(TEXT_LINE * 2400, 9)
    page = zlib.compress(b"BT /F1 12 Tf (x) Tj ET\n" + b"/X0 Do\n" * 50, 9)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        4: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
           b"/XObject << /X0 6 0 R >> >> /Contents 5 0 R >>",
        5: b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(page) + page + b"\nendstream",
        6: b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
           b"/Length %d /Filter /FlateDecode >>\nstream\n" % len(form) + form + b"\nendstream",
    }
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 7\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, 7))
    out += b"trailer\n<< /Size 7 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    a = analyze(write(tmp_path, "forms.pdf", bytes(out)))
    assert a.details["pages"] == 1 and "hello world" in a.text
    assert len(tokenised) == 1 + XFORM_INVOCATIONS  # the page, then the form as often as allowed
