from __future__ import annotations

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base

# The full-text index differs per backend, so the migration creates it in SQL and the
# model does not declare it: an FTS5 table on SQLite (its shadow tables are hidden from
# autogenerate by app.db.migrate), a generated tsvector column with a GIN index on PostgreSQL.
FULL_TEXT_OBJECTS = ("search_documents_fts", "search_documents.tsv", "search_documents.ix_search_documents_tsv")


class Document(Base):
    """A searchable document: public (no owner) or private to one account (its OAuth subject)."""

    __tablename__ = "search_documents"
    __table_args__ = {"info": {"unmanaged": FULL_TEXT_OBJECTS}}

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(200), unique=True)
    title: Mapped[str] = mapped_column(String(300))
    url: Mapped[str] = mapped_column(String(500))
    module: Mapped[str] = mapped_column(String(120), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    body: Mapped[str] = mapped_column(Text)
    owner: Mapped[str | None] = mapped_column(String(255), index=True)
