"""What the server says to a person, in the language of the request.

A sentence is written in English where it is said, and looked up by that English in the catalogue
of its folder (``wording.json`` beside the module: ``{english: {language: translation}}``) when the
request asks for another language (``openai/locale``, read once per tool call by
``app.mcp.middleware.OutputGuard``). The text stays a ``str``: a log, a test or a layer that never
translates reads the English.

    say = Wording(__file__)
    raise ToolFailure(say("Your library holds {held}.", held=count), advice)

Why not gettext: its catalogues are compiled ``.mo`` files (msgfmt or Babel as a build step, for
a few dozen sentences); a JSON file per folder is read as written, reviewed beside the code that
says it, and leaves with its feature. ``tests/unit/test_wording.py`` finds every ``say("...")`` in
``app/`` and fails on a sentence a catalogue lacks, a language missing, a placeholder lost, or an
entry no code says any more.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cached_property
from pathlib import Path
from typing import Any

from app.i18n import lookup, requested_locale

LANGUAGES = ("en", "es", "fr", "pt", "zh")  # the widgets' and the pages' languages
CATALOGUE = "wording.json"
_language: ContextVar[str] = ContextVar("app_wording_language", default="en")


class Said(str):
    """English text that remembers how it was made (its catalogue, template and values), so that
    it can be said again in another language."""

    __slots__ = ("template", "values", "wording")
    template: str
    values: Mapping[str, Any]
    wording: Wording

    def __new__(cls, wording: Wording, template: str, values: Mapping[str, Any]) -> Said:
        english = {name: _listed(value) for name, value in values.items()}
        said = super().__new__(cls, template.format(**english) if values else template)
        said.wording, said.template, said.values = wording, template, values
        return said

    def __reduce__(self) -> tuple[Any, ...]:
        # copy, deepcopy and pickle make it again from what made it (str's own way passes one
        # argument, which __new__ does not take).
        return (Said, (self.wording, self.template, self.values))

    def said_in(self, language: str) -> str:
        values = {name: in_language(value, language) for name, value in self.values.items()}
        try:
            return self.wording.template(self.template, language).format(**values)
        except (KeyError, IndexError, ValueError):  # a translation that lost a placeholder
            return self.template.format(**values)


class Wording:
    """The sentences of one folder: ``Wording(__file__)`` reads ``wording.json`` beside the module
    on first use (never at import)."""

    def __init__(self, module_file: str) -> None:
        self.path = Path(module_file).with_name(CATALOGUE)

    def __call__(self, template: str, /, **values: Any) -> Said:
        """``template`` with ``values`` (a ``Said`` among them is said in the same language; a
        tuple is a list of them, "; " between)."""
        return Said(self, template, values)

    @staticmethod
    def mark(template: str) -> str:
        """A sentence said later (``say(TEMPLATES[kind], ...)``): marked where it is written, so
        that the test of the catalogues finds it."""
        return template

    @cached_property
    def catalogue(self) -> Mapping[str, Mapping[str, str]]:
        try:
            entries = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return {english: dict(said) for english, said in entries.items()}

    def template(self, english: str, language: str) -> str:
        """``english`` in ``language``; English where the catalogue has no translation (the test of
        the catalogues keeps that from shipping)."""
        if language == "en":
            return english
        return self.catalogue.get(english, {}).get(language) or english


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def language() -> str:
    """The language of the request being answered (English outside one)."""
    return _language.get()


# Between the items of a list said in a sentence: French sets a no-break space before ";",
# Chinese writes the full-width mark.
SEPARATORS = {"fr": "\u00a0; ", "zh": "；"}


def _listed(value: Any, language_: str = "en") -> Any:
    if isinstance(value, tuple):
        separator = SEPARATORS.get(language_, "; ")
        return separator.join(str(in_language(item, language_)) for item in value)
    return value


def in_language(text: Any, language_: str | None = None) -> Any:
    """``text`` said in ``language_`` (the request's by default) when it is a ``Said`` (a tuple:
    each of them, "; " between); anything else as it is (a name, a number, text the server did
    not write)."""
    if isinstance(text, tuple):
        return _listed(text, language_ or _language.get())
    if not isinstance(text, Said):
        return text
    wanted = language_ or _language.get()
    return str(text) if wanted == "en" else text.said_in(wanted)


def language_of(meta: Mapping[str, Any] | None) -> str:
    """The language among ``LANGUAGES`` that a request's ``_meta`` asks for (else English)."""
    return lookup(requested_locale(meta), LANGUAGES)


@contextmanager
def speaking(language_: str) -> Iterator[None]:
    """Answer in ``language_`` until the block ends."""
    token = _language.set(language_)
    try:
        yield
    finally:
        _language.reset(token)
