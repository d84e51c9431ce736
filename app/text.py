"""Text a database can keep, the one rule every layer applies: no NUL (PostgreSQL refuses it in text) and no
unpaired surrogate (JSON's ``"\\ud800"`` decodes to one, and no encoder writes it: not to a database, a file name
or a log line). Where it comes from decides what happens: a caller's arguments or credentials are refused
(``unstorable``), a file's own content is kept with U+FFFD in its place (``storable_text``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from app.wording import Wording

say = Wording(__file__)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# In json.dumps(ensure_ascii=False)'s text: a NUL as the encoder escapes it, or a lone surrogate.
_WRITTEN = re.compile("\\\\u0000|[\ud800-\udfff]")
WALK_LIMIT = 100_000  # items walked to locate what the encoded text showed
FLAT_ITEMS = 64  # a dict of so many strings and numbers at most is walked without encoding it
_FLAT = frozenset({str, int, float, bool, type(None)})


def unstorable_character(text: str) -> str | None:
    """What in ``text`` no database keeps, in words, or None."""
    if "\x00" in text:
        return say("a NUL character (U+0000)")
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return say("an unpaired surrogate (U+{code}), which is not Unicode text",
                   code=f"{ord(text[exc.start]):04X}")
    return None


# The most of a path the answer names ("a key of" and the language's words around it aside).
PATH_LIMIT = 128


def unstorable(value: Any, root: str = "", whole: str = "arguments") -> tuple[str, str] | None:
    """Where (``file.file_id``, ``files[1].download_url``) the first string of a decoded JSON value, key or value,
    holds such a character, and which. ``root``: what the paths start with; ``whole``: the value's own name.

    A client writes the value, up to the body limit, in any shape: a million empty lists cost a Python walk
    seconds of the event loop. So the value is first written out by the json module's C encoder and searched
    (0.3 s for a million nodes here): nothing found, nothing walked. Only a value that holds such a character
    is walked, depth first, for the path, with an iterator per open container (memory grows with the depth,
    a path is spelled only for the answer; spelling every child's path up front let a 60 KB body take
    380 MiB), and at most ``WALK_LIMIT`` items: past them the answer names the whole value."""
    if value is None:
        return None
    if type(value) is dict and len(value) <= FLAT_ITEMS and all(
        type(item) in _FLAT for item in value.values()
    ):  # what a tool call's arguments and _meta mostly are: looked at directly, in a third of
        # the time the encoder takes (the bench's calls pass two such values each)
        for key, item in value.items():
            if isinstance(key, str) and (found := unstorable_character(key)) is not None:
                return _a_key_of(root, whole), found
            if type(item) is str and (found := unstorable_character(item)) is not None:
                return _spelled(root, [(False, key)]) or whole, found
        return None
    try:
        written = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        # Not JSON's types, or deeper than the encoder recurses: a caller in this process (over HTTP
        # the parsers refuse JSON nested past 200 levels), walked whole.
        written = None
    whole_found = None
    if written is not None:
        if (hit := _WRITTEN.search(written)) is None:
            return None
        # "\\u0000" is how the encoder writes a NUL; a lone surrogate it writes as itself.
        whole_found = unstorable_character("\x00" if len(hit.group()) > 1 else hit.group())
    found = _walk(value, root, whole, WALK_LIMIT if written is not None else None)
    if found is _TOO_LARGE:  # too large to locate: the whole value is named
        return (root or whole, whole_found) if whole_found is not None else None
    return found


_TOO_LARGE = ("", "")


def _walk(value: Any, root: str, whole: str, budget: int | None) -> tuple[str, str] | None:
    if isinstance(value, str):
        found = unstorable_character(value)
        return (root or whole, found) if found is not None else None
    steps: list[tuple[bool, Any]] = []  # (is an index, key or index) from the root to the open container
    stack: list[Iterator[tuple[bool, Any, Any]]] = []
    if (children := _children(value)) is not None:
        stack.append(children)
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if steps:
                steps.pop()
            continue
        if budget is not None:
            budget -= 1
            if budget < 0:
                return _TOO_LARGE
        is_index, key, item = step
        if not is_index and isinstance(key, str) and (found := unstorable_character(key)) is not None:
            return _a_key_of(_spelled(root, steps), whole), found
        if isinstance(item, str):
            if (found := unstorable_character(item)) is not None:
                return _spelled(root, [*steps, (is_index, key)]) or whole, found
        elif (children := _children(item)) is not None:
            steps.append((is_index, key))
            stack.append(children)
    return None


def _children(item: Any) -> Iterator[tuple[bool, Any, Any]] | None:
    if isinstance(item, dict):
        return ((False, key, inner) for key, inner in item.items())
    if isinstance(item, list):
        return ((True, index, inner) for index, inner in enumerate(item))
    return None


def _a_key_of(path: str, whole: str) -> str:
    """Where a key is, in words: of its container's path, or of the whole value ("a key of the
    arguments": one sentence, for "of the" is one word in French and Portuguese)."""
    return say("a key of {where}", where=path) if path else say("a key of the {whole}", whole=whole)


def _spelled(root: str, steps: list[tuple[bool, Any]]) -> str:
    path = root
    for is_index, key in steps:
        path = f"{path}[{key}]" if is_index else (f"{path}.{key}" if path else str(key))
    return path[:PATH_LIMIT]  # keys are the caller's, of any length: the answer's path is bounded


def storable_text(text: str) -> str:
    """``text`` with each character no database keeps replaced by U+FFFD (one for one: lengths stay)."""
    return _UNSTORABLE.sub("\ufffd", text) if "\x00" in text or not text.isascii() else text
