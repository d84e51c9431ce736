"""``unstorable``: where the first character no database stores is, in arguments of any shape."""

from __future__ import annotations

import json

from app.text import unstorable


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


def test_text_of_any_script_and_paired_surrogates_pass():
    assert unstorable({"title": "Pão de queijo 🧀", "tags": ["日本語", "Ελληνικά"], "n": 3, "x": None}) is None
    assert unstorable(None) is None


def test_nesting_deeper_than_python_recurses_is_walked_without_recursion():
    deep: object = "a\x00"
    for _ in range(5000):
        deep = {"k": [deep]}
    found = unstorable(deep)
    assert found is not None and found[1] == "a NUL character (U+0000)"
