"""``unstorable``: where the first character no database stores is, in arguments of any shape."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from app import text
from app.text import WALK_LIMIT, unstorable


def test_it_names_the_first_string_that_holds_a_nul_or_an_unpaired_surrogate_wherever_it_is():
    assert unstorable({"file": {"download_url": "https://x", "file_id": "a\x00b"}}) == (
        "file.file_id", "a NUL character (U+0000)")
    assert unstorable({"files": [{"file_id": "ok"}, {"file_id": json.loads('"a\\udc01"')}]}) == (
        "files[1].file_id", "an unpaired surrogate (U+DC01), which is not Unicode text")
    assert unstorable({"data": {"k\x00": 1}}) == ("a key of data", "a NUL character (U+0000)")
    assert unstorable("\x00") == ("arguments", "a NUL character (U+0000)")
    assert unstorable({"openai/userLocation": {"city": "Par\x00is"}}, "_meta") == (
        "_meta.openai/userLocation.city", "a NUL character (U+0000)")
    assert unstorable({"k\x00": 1}, "_meta") == ("a key of _meta", "a NUL character (U+0000)")


class Name(str):
    """A key of a caller in this process: a str subclass, not JSON's type."""


FLAT = [
    {"query": "ok", "limit": 5, "name": "Jo\x00", "x": 1.5},
    {"ok": True, "k\udc01": None},
    {"": "\x00"},  # an empty key: the path is the whole value's name
    {Name("k\x00"): 1},
    {"k\x00": "v\x00"},  # the key first, as the walk reads it
    {"a": "fine", "b": float("nan"), "c": 10**400, "d": "\\u0000"},
    {1: "a", "b": "c\x00"},
    {},
]


@pytest.mark.parametrize("value", FLAT)
@pytest.mark.parametrize("root", ["", "_meta"])
def test_a_flat_value_looked_at_without_encoding_answers_as_the_encoded_walk_does(value, root):
    # Tool arguments and _meta are mostly a dict of strings and numbers: looked at directly. A
    # one-item list beside them makes the same value take the encoded path, then the walk.
    nested = {**value, "\uffffzz": ["a"]}
    assert unstorable(value, root) == unstorable(nested, root)


def test_a_flat_value_names_the_string_that_holds_the_character():
    flat = FLAT[0]
    assert unstorable(flat) == ("name", "a NUL character (U+0000)")
    assert unstorable(flat, "_meta") == ("_meta.name", "a NUL character (U+0000)")
    assert unstorable({"": "\x00"}) == ("arguments", "a NUL character (U+0000)")
    assert unstorable({Name("k\x00"): 1}) == ("a key of the arguments", "a NUL character (U+0000)")


def test_text_of_any_script_and_paired_surrogates_pass():
    assert unstorable({"title": "Pão de queijo 🧀", "tags": ["日本語", "Ελληνικά"], "n": 3, "x": None}) is None
    assert unstorable(None) is None


def test_nesting_deeper_than_python_recurses_is_walked_without_recursion():
    deep: object = "a\x00"
    for _ in range(5000):
        deep = {"k": [deep]}
    found = unstorable(deep)
    assert found is not None and found[1] == "a NUL character (U+0000)"


def test_a_long_key_over_many_items_is_walked_in_memory_that_grows_with_depth_only():
    # A 60 KB body that took 380 MiB when every child's path was spelled up front.
    value = {"k" * 40_000: [0] * 10_000, "tail": "a\x00"}
    tracemalloc.start()
    try:
        assert unstorable(value) == ("tail", "a NUL character (U+0000)")
        assert tracemalloc.get_traced_memory()[1] < 5_000_000
    finally:
        tracemalloc.stop()


def test_a_clean_value_is_not_walked(monkeypatch):
    def walked(*args: object) -> None:
        raise AssertionError("walked")

    monkeypatch.setattr(text, "_walk", walked)
    assert unstorable([[0], {"a": "b"}] * 1000) is None


def test_an_escape_written_as_text_is_not_a_nul():
    assert unstorable({"a": "a literal \\u0000, not a NUL"}) is None


def test_past_the_walk_limit_the_whole_value_is_named():
    value: list[object] = [[0]] * (WALK_LIMIT + 10)
    value.append("a\ud800")
    assert unstorable(value, "_meta") == ("_meta", "an unpaired surrogate (U+D800), which is not Unicode text")
