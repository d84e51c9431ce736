"""Search use case: every word must match; if nothing does, fall back to any word."""

from __future__ import annotations

from app.db import UnitOfWork
from app.features.search.repository import SearchRepository, tokens
from app.features.search.schemas import SearchHit, SearchResults

DEFAULT_LIMIT = 8


def search(uow: UnitOfWork, query: str, limit: int = DEFAULT_LIMIT, viewer: str | None = None) -> SearchResults:
    """Public documents for everyone; ``viewer`` (an account) also finds its own private ones."""
    words = tokens(query)
    repo = uow.repository(SearchRepository)
    rows = repo.search(words, limit, match_all=True, viewer=viewer)
    if not rows and len(words) > 1:
        rows = repo.search(words, limit, match_all=False, viewer=viewer)
    return SearchResults(
        results=[SearchHit(id=r.id, title=r.title, url=r.url, snippet=r.snippet[:400], score=round(r.score, 6))
                 for r in rows]
    )
