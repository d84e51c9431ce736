from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Preference(Base):
    """One setting one account chose. ``subject`` is the OAuth subject; ``key`` the setting's name
    as a feature declares it (a row whose feature is gone is never read)."""

    __tablename__ = "preferences"

    subject: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[object] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
