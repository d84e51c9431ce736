from __future__ import annotations

from sqlalchemy import Float, ForeignKey, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base


class Animal(Base):
    __tablename__ = "zoo_animals"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    species: Mapped[str] = mapped_column(String(120))
    scientific_name: Mapped[str] = mapped_column(String(120))
    habitat: Mapped[str] = mapped_column(Text)
    diet: Mapped[str] = mapped_column(String(200))
    conservation_status: Mapped[str] = mapped_column(String(40))
    lifespan_years: Mapped[int] = mapped_column(Integer)
    weight_kg: Mapped[float] = mapped_column(Float)
    fun_fact: Mapped[str] = mapped_column(Text)
    enclosure: Mapped[str] = mapped_column(String(60))
    likes: Mapped[int] = mapped_column(Integer, server_default=text("0"), default=0)


class AnimalText(Base):
    """An animal's words in one language other than English (its species, habitat, diet, fun
    fact, enclosure): names, numbers and the IUCN status are the same in every language."""

    __tablename__ = "zoo_animal_texts"

    animal_id: Mapped[str] = mapped_column(ForeignKey("zoo_animals.id", ondelete="CASCADE"),
                                           primary_key=True)
    language: Mapped[str] = mapped_column(String(8), primary_key=True)
    species: Mapped[str] = mapped_column(String(120))
    habitat: Mapped[str] = mapped_column(Text)
    diet: Mapped[str] = mapped_column(String(200))
    fun_fact: Mapped[str] = mapped_column(Text)
    enclosure: Mapped[str] = mapped_column(String(60))
