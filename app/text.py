"""Text a database can keep, the one rule every layer applies: no NUL (PostgreSQL refuses it in text) and no
unpaired surrogate (JSON's ``"\\ud800"`` decodes to one, and no encoder writes it: not to a database, a file name
or a log line). Where it comes from decides what happens: a caller's arguments or credentials are refused
(``unstorable``), a file's own content is kept with U+FFFD in its place (``storable_text``)."""

from __future__ import annotations

import re
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def unstorable_character(text: str) -> str | None:
    """What in ``text`` no database keeps, in words, or None."""
    if "\x00" in text:
        return "a NUL character (U+0000)"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"an unpaired surrogate (U+{ord(text[exc.start]):04X}), which is not Unicode text"
    return None


def unstorable(value: Any, root: str = "", whole: str = "arguments") -> tuple[str, str] | None:
    """Where (``file.file_id``, ``files[1].download_url``) the first string of a decoded JSON value, key or value,
    holds such a character, and which. ``root``: what the paths start with; ``whole``: the value's own name."""
    stack: list[tuple[str, Any]] = [(root, value)]
    while stack:  # iterative: the nesting is the client's, and JSON nests deeper than Python recurses
        path, item = stack.pop()
        if isinstance(item, str):
            if (found := unstorable_character(item)) is not None:
                return path or whole, found
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                if isinstance(key, str) and (found := unstorable_character(key)) is not None:
                    return f"a key of {path or 'the ' + whole}", found
                stack.append((f"{path}.{key}" if path else str(key), inner))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", inner) for i, inner in reversed(list(enumerate(item))))
    return None


def storable_text(text: str) -> str:
    """``text`` with each character no database keeps replaced by U+FFFD (one for one: lengths stay)."""
    return _UNSTORABLE.sub("\ufffd", text) if "\x00" in text or not text.isascii() else text
