"""Ranked full-text queries: FTS5 + bm25 on SQLite, tsvector + ts_rank_cd on PostgreSQL.

Both take the same sanitized token list, so user input never reaches the
query syntax of either engine, and both return the same row shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import bindparam, delete, func, select, text
from sqlalchemy.orm import Session

from app.db.upsert import rowcount, upsert
from app.features.search.models import Document

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TOKENS = 12


@dataclass(frozen=True)
class Row:
    id: str
    title: str
    url: str
    snippet: str
    score: float


def tokens(query: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(query)][:MAX_TOKENS]


_SQLITE = text(
    """
    SELECT d.id, d.title, d.url,
           snippet(search_documents_fts, 1, '', '', '…', 24) AS snippet,
           -bm25(search_documents_fts, 8.0, 1.0) AS score
    FROM search_documents_fts JOIN search_documents AS d ON d.pk = search_documents_fts.rowid
    WHERE search_documents_fts MATCH :match AND (d.owner IS NULL OR d.owner = :viewer)
    ORDER BY bm25(search_documents_fts, 8.0, 1.0), d.id
    LIMIT :limit
    """
)

_POSTGRES = text(
    """
    WITH q AS (SELECT to_tsquery('english', :match) AS query),
    top AS (
        SELECT d.id, d.title, d.url, d.body, ts_rank_cd(d.tsv, q.query, 1) AS score
        FROM search_documents AS d, q
        WHERE d.tsv @@ q.query AND (d.owner IS NULL OR d.owner = :viewer)
        ORDER BY score DESC, d.id
        LIMIT :limit
    )
    SELECT top.id, top.title, top.url,
           ts_headline('english', top.body, q.query,
                       'StartSel="",StopSel="",MaxWords=30,MinWords=12,ShortWord=2') AS snippet,
           top.score
    FROM top, q
    ORDER BY top.score DESC, top.id
    """
)


# By its unique id; a public module page only (a private document never names a module).
_MODULE = (select(Document.id, Document.title, Document.url, Document.body)
           .where(Document.id == bindparam("id"), Document.kind == "module",
                  Document.owner.is_(None)))


class SearchRepository:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.dialect = session.get_bind().dialect.name

    def search(self, words: list[str], limit: int, match_all: bool, viewer: str | None = None) -> list[Row]:
        """Ranked public documents, plus ``viewer``'s private ones."""
        if not words:
            return []
        # "ordered dict" should also find OrderedDict: the words run together are an alternative.
        joined = "".join(words) if len(words) > 1 else None
        if self.dialect == "postgresql":
            match = (" & " if match_all else " | ").join(words[:-1] + [f"{words[-1]}:*"])
            if joined:
                match = f"({match}) | {joined}:*"
            query = _POSTGRES
        else:
            match = (" AND " if match_all else " OR ").join([f'"{w}"' for w in words[:-1]] + [f'"{words[-1]}"*'])
            if joined:
                match = f'({match}) OR "{joined}"*'
            query = _SQLITE
        rows = self.session.execute(query, {"match": match, "limit": limit, "viewer": viewer})
        return [Row(r.id, r.title, r.url, " ".join((r.snippet or "").split()), float(r.score)) for r in rows]

    def module_page(self, name: str) -> Row | None:
        """The public page of module ``name`` (its id is ``py:<name>``), its body's start as the
        snippet (the service ranks it)."""
        found = self.session.execute(_MODULE, {"id": f"py:{name}"}).first()
        if found is None:
            return None
        return Row(found.id, found.title, found.url, " ".join(found.body[:300].split()), 0.0)

    def count(self) -> int:
        return int(self.session.scalar(select(func.count()).select_from(Document)) or 0)

    def save_all(self, documents: list[dict]) -> None:
        """Insert new documents and update changed ones, keyed by ``id``."""
        upsert(self.session, Document.__table__, documents)

    def remove(self, ids: list[str]) -> None:
        self.session.execute(delete(Document).where(Document.id.in_(ids)))

    def remove_owned(self, owner: str) -> int:
        """Every private document of ``owner`` (the full-text index follows, as for ``remove``)."""
        return rowcount(self.session.execute(delete(Document).where(Document.owner == owner))) or 0
