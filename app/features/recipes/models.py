from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class SavedRecipe(Base):
    """One recipe in one account's list. ``account`` is the OAuth subject; ``id`` derives from the title."""

    __tablename__ = "saved_recipes"
    __table_args__ = (Index("ix_saved_recipes_account_saved_at", "account", "saved_at"),)

    account: Mapped[str] = mapped_column(String(255), primary_key=True)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    source_url: Mapped[str | None] = mapped_column(String(2048))
    saved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
