"""The catalogues of what the server says to a person (``app.wording``): every sentence a module
says (``say("...")`` or ``say.mark("...")``, found in the source) is in its folder's
``wording.json`` in every language, with the same placeholders, not left in English; no entry is
kept for a sentence no code says any more."""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from pathlib import Path

import pytest

from app.wording import CATALOGUE, LANGUAGES, Said, Wording, in_language, placeholders, speaking

APP = Path(__file__).resolve().parents[2] / "app"
TRANSLATED = [language for language in LANGUAGES if language != "en"]
# Said the same in a language: a unit or a shape no language writes otherwise.
SAME = {
    ("{seconds} s", "es"), ("{seconds} s", "fr"), ("{seconds} s", "pt"),
    ("{minutes} min", "es"), ("{minutes} min", "fr"), ("{minutes} min", "pt"),
    ("{which}: {message}", "es"), ("{which}: {message}", "pt"),
    ("{count} bytes", "es"), ("{count} bytes", "pt"),
    ("{argument} {problem}", "es"), ("{argument} {problem}", "fr"), ("{argument} {problem}", "pt"),
    ("{argument} {problem}", "zh"),
}


def _literal(node: ast.expr) -> str | None:
    """A string literal, implicitly concatenated parts included."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def said_in_source() -> dict[Path, set[str]]:
    """Each folder's sentences: the literal first argument of ``say(...)`` and ``say.mark(...)``."""
    found: dict[Path, set[str]] = defaultdict(set)
    for module in APP.rglob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            named = isinstance(func, ast.Name) and func.id == "say"
            marked = (isinstance(func, ast.Attribute) and func.attr == "mark"
                      and isinstance(func.value, ast.Name) and func.value.id == "say")
            if (named or marked) and (text := _literal(node.args[0])) is not None:
                found[module.parent].add(text)
    return found


SAID = said_in_source()
FOLDERS = sorted(set(SAID) | {p.parent for p in APP.rglob(CATALOGUE)})


def test_the_source_says_what_the_catalogues_are_for() -> None:
    # The scan finds the sentences (a scan finding nothing would pass every test below): the
    # platform's alone, which a fork without the demos keeps, are more than 40.
    assert sum(len(s) for s in SAID.values()) >= 40
    assert "There is no tool named “{name}” here." in SAID[APP / "mcp"]
    assert "must be {ge} or more" in SAID[APP]  # a sentence marked to be said later


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(APP)) or "app")
def test_each_folder_catalogue_says_each_sentence_in_every_language(folder: Path) -> None:
    path = folder / CATALOGUE
    catalogue = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    said = SAID.get(folder, set())
    problems = [f"missing: {text!r}" for text in sorted(said - catalogue.keys())]
    problems += [f"said by no code: {text!r}" for text in sorted(catalogue.keys() - said)]
    for english, translations in catalogue.items():
        for language in TRANSLATED:
            translation = translations.get(language)
            if not translation:
                problems.append(f"{language} missing for {english!r}")
            elif placeholders(translation) != placeholders(english):
                problems.append(f"{language} placeholders differ for {english!r}")
            elif translation == english and (english, language) not in SAME:
                problems.append(f"{language} left in English: {english!r}")
        extra = translations.keys() - set(TRANSLATED)
        if extra:
            problems.append(f"unknown languages {sorted(extra)} for {english!r}")
    assert not problems, f"{path}:\n" + "\n".join(problems)


def test_a_sentence_is_said_in_the_language_of_the_request(tmp_path: Path) -> None:
    module = tmp_path / "feature.py"
    (tmp_path / CATALOGUE).write_text(json.dumps({
        "{count} files were kept in {where}.": {"fr": "{count} fichiers gardés dans {where}."},
        "the library": {"fr": "la bibliothèque"},
    }), encoding="utf-8")
    say = Wording(str(module))
    said = say("{count} files were kept in {where}.", count=3, where=say("the library"))
    assert isinstance(said, Said) and said == "3 files were kept in the library."
    assert in_language(said, "fr") == "3 fichiers gardés dans la bibliothèque."
    with speaking("fr"):
        assert in_language(said) == "3 fichiers gardés dans la bibliothèque."
        assert in_language("plain text") == "plain text"  # not the server's sentence: as it is
    assert in_language(said) == "3 files were kept in the library."  # the request ended
    # A language the catalogue lacks: the English, never an error.
    assert in_language(said, "zh") == "3 files were kept in the library."
    # A list of sentences, each said in the language.
    listed = say("{count} files were kept in {where}.", count=1, where=(say("the library"),
                                                                      "/tmp"))
    assert listed == "1 files were kept in the library; /tmp."
    assert in_language(listed, "fr") == "1 fichiers gardés dans la bibliothèque\u00a0; /tmp."


def test_the_platforms_refusals_are_said_in_the_language_of_the_request() -> None:
    """A call that needs an account, one over its budget, and a database outage: the person's
    block in French, the model's in English (each breaks when its in_language goes)."""
    from app.db import DatabaseUnavailable  # noqa: PLC0415
    from app.limits import Check, OverLimit, parse_rate  # noqa: PLC0415
    from app.mcp import registry  # noqa: PLC0415
    from app.mcp.budgets import over_budget  # noqa: PLC0415

    catalogue = json.loads((APP / "mcp" / CATALOGUE).read_text(encoding="utf-8"))
    with speaking("fr"):
        refused = registry.refusal("Notes", ["notes.read"], "https://r.example/meta",
                                   signed_in=False)
        outage = registry.failed("notes", registry._outage(DatabaseUnavailable()))
        check = Check("notes", parse_rate("5/minute"), "k", "this caller")
        over = over_budget("notes", "notes", OverLimit(check, retry_after=30))
    said = "{title} needs your account: connect (sign in to) this app to use it."
    assert refused.content[0].text == catalogue[said]["fr"].format(title="Notes")
    assert refused.content[1].text.startswith("Ask the user to connect")
    assert outage.content[0].text == catalogue[
        "The database is unavailable, please retry shortly."]["fr"]
    waited = catalogue["This was not done: too many requests for now. Try again in {wait}."]
    assert over["content"][0]["text"] == waited["fr"].format(wait="30 s")


def _literal_refused(language: str) -> str:
    from typing import Literal  # noqa: PLC0415

    from pydantic import TypeAdapter, ValidationError  # noqa: PLC0415

    from app.plain import plain_error  # noqa: PLC0415

    with pytest.raises(ValidationError) as refused:
        TypeAdapter(Literal["debug", "info", "error"]).validate_python("loud")
    with speaking(language):
        return in_language(plain_error(refused.value.errors()[0]))


def test_the_allowed_values_are_listed_as_pydantic_lists_them_in_english() -> None:
    assert _literal_refused("en") == "must be one of 'debug', 'info' or 'error'"


@pytest.mark.parametrize(("language", "said"), [
    ("fr", "doit être l’une de ces valeurs\u00a0: 'debug', 'info' ou 'error'"),
    ("zh", "必须是以下之一：'debug', 'info' 或 'error'"),
])
def test_the_allowed_values_are_listed_with_the_languages_or(language: str, said: str) -> None:
    """pydantic lists a literal's values with an English "or": said in the request's language."""
    assert _literal_refused(language) == said
