from __future__ import annotations

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Document(Base):
    """A searchable document: public (no owner) or private to one account (its OAuth subject).

    Its full-text index differs per backend, so migration 0001 creates it in SQL and the model
    does not declare it: the FTS5 table ``search_documents_fts`` on SQLite, a generated
    ``tsvector`` column with a GIN index on PostgreSQL (autogenerate leaves both alone, see
    app.db.migrate).
    """

    __tablename__ = "search_documents"

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(200), unique=True)
    title: Mapped[str] = mapped_column(String(300))
    url: Mapped[str] = mapped_column(String(500))
    module: Mapped[str] = mapped_column(String(120), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    body: Mapped[str] = mapped_column(Text)
    owner: Mapped[str | None] = mapped_column(String(255), index=True)
