from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class City(Base):
    __tablename__ = "cafe_cities"

    key: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))
    country: Mapped[str] = mapped_column(String(2))


class CityAlias(Base):
    """A normalised spelling users may send (``normalize_city``), in any language."""

    __tablename__ = "cafe_city_aliases"

    alias: Mapped[str] = mapped_column(String(80), primary_key=True)
    city_key: Mapped[str] = mapped_column(ForeignKey("cafe_cities.key", ondelete="CASCADE"), index=True)


class CityName(Base):
    """How a city is written in one language, for answers in that language."""

    __tablename__ = "cafe_city_names"

    city_key: Mapped[str] = mapped_column(ForeignKey("cafe_cities.key", ondelete="CASCADE"), primary_key=True)
    language: Mapped[str] = mapped_column(String(8), primary_key=True)
    name: Mapped[str] = mapped_column(String(80))


class Cafe(Base):
    __tablename__ = "cafes"

    id: Mapped[str] = mapped_column(String(80), primary_key=True)
    city_key: Mapped[str] = mapped_column(ForeignKey("cafe_cities.key", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    address: Mapped[str] = mapped_column(String(200))
    neighborhood: Mapped[str | None] = mapped_column(String(120))
    since: Mapped[int | None] = mapped_column(Integer)
    specialty: Mapped[str | None] = mapped_column(Text)
    # WGS 84 degrees, placed by hand from the address (data/NOTICE.txt): a pin on the widget's map.
    latitude: Mapped[float | None] = mapped_column(Float)
    longitude: Mapped[float | None] = mapped_column(Float)


class CafeText(Base):
    """A café's description in one language other than English (its name, address and
    neighbourhood are proper names: the same in every language)."""

    __tablename__ = "cafe_texts"

    cafe_id: Mapped[str] = mapped_column(ForeignKey("cafes.id", ondelete="CASCADE"),
                                         primary_key=True)
    language: Mapped[str] = mapped_column(String(8), primary_key=True)
    specialty: Mapped[str] = mapped_column(Text)
