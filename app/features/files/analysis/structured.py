"""JSON documents (streamed, see jsonscan) and JSON Lines."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from app.features.files.analysis.decoding import open_text, replaced_warning
from app.features.files.analysis.jsonscan import scan_json
from app.features.files.analysis.jsonshape import KEY_CHARS, TYPE_NAMES, JsonScan
from app.features.files.analysis.model import MAX_INDEX_CHARS, MAX_SUMMARY_CHARS, Notes, Result, clip
from app.features.files.analysis.sniffing import Sniffed

MAX_LINE = 8 << 20
MAX_RECORD_KEYS = 200
BAD_LINES_SHOWN = 5


def analyze_json(path: Path, sniffed: Sniffed, notes: Notes) -> Result:
    encoding = sniffed.encoding or "utf-8"
    scan: JsonScan = sniffed.json or scan_json(path, encoding)
    if sniffed.guessed_encoding:
        notes.add(f"the file is not valid UTF-8; it was read as {encoding}")
    if message := replaced_warning(scan.tally, encoding):
        notes.add(message)
    if scan.error:
        notes.add(f"invalid JSON at {scan.error}; the figures describe the part before it")
    details: dict = {"encoding": encoding, "valid": scan.ok, "top_level_type": scan.top_type,
                     "depth": scan.depth, "counts": scan.counts}
    if scan.error:
        details["error"] = scan.error
    if scan.top_type == "object":
        details["key_count"] = scan.members
        details["keys"] = scan.keys
        details["keys_truncated"] = scan.members > len(scan.keys)
        names = ", ".join(clip(k["key"], 30) for k in scan.keys[:8])
        more = f" and {scan.members - 8:,} more" if scan.members > 8 else ""
        shape = f"an object with {scan.members:,} key{'s' if scan.members != 1 else ''}" + \
                (f" ({names}{more})" if names else "")
    else:
        details["length"] = scan.members
        details["element_types"] = scan.element_types
        details["element_keys"] = scan.element_keys
        details["element_keys_truncated"] = scan.element_keys_truncated
        kinds = " and ".join(list(scan.element_types)[:3]) or "no"
        shape = f"an array of {scan.members:,} element{'s' if scan.members != 1 else ''} ({kinds} values)"
        if scan.element_keys:
            shape += "; object keys: " + ", ".join(clip(k["key"], 30) for k in scan.element_keys[:8])
    state = "JSON" if scan.ok else "Invalid JSON (partly read)"
    summary = f"{state}: {shape}, nested {scan.depth} level{'s' if scan.depth != 1 else ''} deep."
    return Result(details, clip(summary, MAX_SUMMARY_CHARS), scan.index_text)


def analyze_jsonl(path: Path, sniffed: Sniffed, notes: Notes) -> Result:
    encoding = sniffed.encoding or "utf-8"
    records = invalid = blank = overlong = 0
    bad_lines: list[int] = []
    record_types: Counter[str] = Counter()
    keys: Counter[str] = Counter()
    key_types: dict[str, Counter[str]] = {}
    index: list[str] = []
    index_len = 0
    keys_truncated = False
    with open_text(path, encoding) as (stream, tally):
        readline = stream.readline
        number = 0
        while line := readline(MAX_LINE):
            number += 1
            if len(line) == MAX_LINE and line[-1] not in "\r\n":
                while (rest := readline(MAX_LINE)) and len(rest) == MAX_LINE and rest[-1] not in "\r\n":
                    pass
                overlong += 1
                invalid += 1
                if len(bad_lines) < BAD_LINES_SHOWN:
                    bad_lines.append(number)
                continue
            if index_len < MAX_INDEX_CHARS:
                index.append(line[: MAX_INDEX_CHARS - index_len])
                index_len += len(index[-1])
            stripped = line.strip()
            if not stripped:
                blank += 1
                continue
            try:
                value = json.loads(stripped)
            except (ValueError, RecursionError):
                invalid += 1
                if len(bad_lines) < BAD_LINES_SHOWN:
                    bad_lines.append(number)
                continue
            records += 1
            record_types[TYPE_NAMES[type(value)]] += 1
            if type(value) is not dict:
                continue
            for key, member in value.items():
                counter = key_types.get(key)
                if counter is None:
                    if len(key_types) >= MAX_RECORD_KEYS:
                        keys_truncated = True
                        continue
                    counter = key_types[key] = Counter()
                keys[key] += 1
                counter[TYPE_NAMES[type(member)]] += 1
    if sniffed.guessed_encoding:
        notes.add(f"the file is not valid UTF-8; it was read as {encoding}")
    if message := replaced_warning(tally, encoding):
        notes.add(message)
    if invalid:
        shown = ", ".join(f"{n:,}" for n in bad_lines) + (", ..." if invalid > len(bad_lines) else "")
        plural = invalid != 1
        notes.add(f"{invalid:,} line{'s are' if plural else ' is'} not valid JSON "
                  f"(line{'s' if plural else ''} {shown})")
    if overlong:
        notes.add(f"{overlong:,} line(s) longer than {MAX_LINE >> 20} MB were skipped")
    details = {
        "encoding": encoding, "records": records, "invalid_lines": invalid, "invalid_line_numbers": bad_lines,
        "blank_lines": blank, "record_types": dict(record_types.most_common()),
        "keys": [{"key": clip(k, KEY_CHARS), "count": n, "types": dict(key_types[k].most_common())}
                 for k, n in keys.items()],
        "keys_truncated": keys_truncated,
    }
    names = ", ".join(clip(k, 30) for k in list(keys)[:8])
    more = f" and {len(keys) - 8:,} more" if len(keys) > 8 else ""
    summary = f"JSON Lines, {records:,} record{'s' if records != 1 else ''}"
    if invalid:
        summary += f" and {invalid:,} invalid line{'s' if invalid != 1 else ''}"
    summary += f"; keys: {names}{more}." if names else "."
    return Result(details, clip(summary, MAX_SUMMARY_CHARS), "".join(index))
