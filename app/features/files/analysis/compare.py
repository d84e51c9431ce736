"""Several analyses side by side; for tables, which columns they share and where their types disagree."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from app.features.files.analysis.model import Analysis, clip

MAX_FILES = 50
MAX_NAMES = 200
LABEL_CHARS = 200


def _labels(items: Sequence[tuple[str, Analysis]]) -> list[str]:
    """The labels, made unique (the comparison is keyed by them) and short."""
    seen: Counter[str] = Counter()
    out = []
    for label, _ in items:
        base = clip(str(label), LABEL_CHARS)
        seen[base] += 1
        out.append(base if seen[base] == 1 else f"{base} ({seen[base]})")
    return out


def compare(items: Sequence[tuple[str, Analysis]]) -> dict:
    items = list(items)[:MAX_FILES]
    labels = _labels(items)
    files = []
    for label, (_, analysis) in zip(labels, items, strict=True):
        entry = {"label": label, "kind": analysis.kind, "mime_type": analysis.mime_type,
                 "bytes": analysis.details.get("bytes")}
        if analysis.kind == "csv":
            entry["rows"] = analysis.details.get("rows")
        elif analysis.kind == "jsonl":
            entry["records"] = analysis.details.get("records")
        files.append(entry)
    result: dict = {"files": files}
    kinds = Counter(a.kind for _, a in items)
    described = ", ".join(f"{n} {k.upper() if k in ('csv', 'json', 'jsonl', 'pdf') else k}"
                          for k, n in kinds.most_common())
    summary = f"Compared {len(items)} file{'s' if len(items) != 1 else ''}" + (f": {described}." if items else ".")
    tables = [(label, a) for label, (_, a) in zip(labels, items, strict=True) if a.kind == "csv"]
    if len(tables) >= 2:
        result["tabular"] = tabular = _tabular(tables)
        shared, conflicts = len(tabular["shared_columns"]), len(tabular["type_conflicts"])
        summary += f" The {len(tables)} tables share {shared} column{'s' if shared != 1 else ''}"
        summary += f", {conflicts} of them with different types." if conflicts else "."
    result["summary"] = summary
    return result


def _tabular(tables: list[tuple[str, Analysis]]) -> dict:
    types = {label: {c.get("name"): c.get("type") for c in a.details.get("columns", [])} for label, a in tables}
    first = list(types[tables[0][0]])
    shared = [name for name in first if all(name in cols for cols in types.values())]
    shared_set = set(shared)
    only_in = {label: [n for n in cols if n not in shared_set][:MAX_NAMES] for label, cols in types.items()}
    conflicts = []
    for name in shared:
        per_file = {label: cols[name] for label, cols in types.items()}
        if len(set(per_file.values())) > 1:
            conflicts.append({"column": name, "types": per_file})
    return {"shared_columns": shared[:MAX_NAMES], "only_in": only_in,
            "type_conflicts": conflicts[:MAX_NAMES], "rows": {label: a.details.get("rows") for label, a in tables}}
