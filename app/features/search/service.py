"""Search use case: every word must match; if nothing does, fall back to any word."""

from __future__ import annotations

from app.db import UnitOfWork
from app.features.search.repository import SearchRepository, tokens
from app.features.search.schemas import SearchHit, SearchResults

DEFAULT_LIMIT = 8


def search(uow: UnitOfWork, query: str, limit: int = DEFAULT_LIMIT) -> SearchResults:
    words = tokens(query)
    repo = SearchRepository(uow)
    rows = repo.search(words, limit, match_all=True)
    if not rows and len(words) > 1:
        rows = repo.search(words, limit, match_all=False)
    return SearchResults(
        results=[SearchHit(id=r.id, title=r.title, url=r.url, snippet=r.snippet[:400], score=round(r.score, 6))
                 for r in rows]
    )
