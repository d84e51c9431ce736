from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class StoredFile(Base):
    """A file's metadata; its bytes are the storage object ``storage_key`` (content-addressed, so several rows
    may share one object). ``kind`` is ``upload`` (a file ChatGPT handed over) or ``report`` (the analysis of an
    upload, ``parent_id``). ``owner`` is the account's OAuth subject, or None for an anonymous upload, which
    has ``expires_at`` set. Times are Unix seconds."""

    __tablename__ = "files"
    __table_args__ = (
        Index("ix_files_owner_created_at", "owner", "created_at"),
        Index("ix_files_expires_at", "expires_at"),
        Index("ix_files_storage_key", "storage_key"),
        Index("ix_files_owner_sha256", "owner", "sha256"),
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    owner: Mapped[str | None] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(10))
    parent_id: Mapped[str | None] = mapped_column(String(40), ForeignKey("files.id", ondelete="CASCADE"), index=True)
    openai_file_id: Mapped[str | None] = mapped_column(String(255))
    file_name: Mapped[str] = mapped_column(String(255))
    claimed_mime_type: Mapped[str | None] = mapped_column(String(255))
    mime_type: Mapped[str] = mapped_column(String(100))
    analysis_kind: Mapped[str] = mapped_column(String(10))
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(512))
    summary: Mapped[str] = mapped_column(Text)
    created_at: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[int | None] = mapped_column(BigInteger)
