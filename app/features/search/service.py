"""Search use case: every word must match; if nothing does, fall back to any word. A query that
names a module (``pathlib``, ``os.path``) finds that module's own page first."""

from __future__ import annotations

import re
from dataclasses import replace

from app.db import UnitOfWork
from app.features.search.repository import SearchRepository, tokens
from app.features.search.schemas import SearchHit, SearchResults

DEFAULT_LIMIT = 8
MAX_SNIPPET = 400
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# Docstring markup a person should not read (reStructuredText roles and literals, reprs of
# default values): each is replaced by what it shows.
_ROLE = re.compile(r":[\w.:-]+:`~?([^`<]*?)(?:\s*<[^`>]*>)?`")
_LITERAL = re.compile(r"``([^`]*)``")
_REPR = re.compile(r"<(?:built-in |bound )?(?:method|function|object|module)\b[^<>]*>")
_LINK = re.compile(r"<(https?://[^<>\s]+)>")


def readable(text: str) -> str:
    """A snippet without its docstring markup: ``:mod:`json``` reads json, a literal
    ````s```` reads s, a default's repr (``<built-in method match of ...>``) reads ``…``."""
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1] if m.group(0).count("~") else
                     m.group(1), text)
    text = _LITERAL.sub(r"\1", text)
    text = _REPR.sub("…", text)
    return " ".join(_LINK.sub(r"\1", text).split())


def search(uow: UnitOfWork, query: str, limit: int = DEFAULT_LIMIT, viewer: str | None = None) -> SearchResults:
    """Public documents for everyone; ``viewer`` (an account) also finds its own private ones."""
    words = tokens(query)
    repo = uow.repository(SearchRepository)
    rows = repo.search(words, limit, match_all=True, viewer=viewer)
    if not rows and len(words) > 1:
        rows = repo.search(words, limit, match_all=False, viewer=viewer)
    name = query.strip()
    if MODULE_NAME.fullmatch(name) and (page := repo.module_page(name)) is not None:
        # The module itself before its members (pathlib before PurePath.anchor), scored above.
        rest = [r for r in rows if r.id != page.id]
        top = max((r.score for r in rest), default=0.0)
        rows = [replace(page, score=top + 1.0), *rest][:limit]
    return SearchResults(results=[
        SearchHit(id=r.id, title=r.title, url=r.url, snippet=readable(r.snippet)[:MAX_SNIPPET],
                  score=round(r.score, 6)) for r in rows])
