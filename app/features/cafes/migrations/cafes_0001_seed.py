"""cafes: cities, aliases and cafés, seeded from data/cafes.json

Revision ID: cafes_0001
Revises:
Create Date: 2026-11-29
"""
from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "cafes_0001"
down_revision = None
branch_labels = ("cafes",)
depends_on = None

DATA = Path(__file__).resolve().parents[1] / "data" / "cafes.json"


def upgrade() -> None:
    cities = op.create_table(
        "cafe_cities",
        sa.Column("key", sa.String(40), nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("country", sa.String(2), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_cafe_cities"),
    )
    aliases = op.create_table(
        "cafe_city_aliases",
        sa.Column("alias", sa.String(80), nullable=False),
        sa.Column("city_key", sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint("alias", name="pk_cafe_city_aliases"),
        sa.ForeignKeyConstraint(["city_key"], ["cafe_cities.key"], ondelete="CASCADE",
                                name="fk_cafe_city_aliases_city_key_cafe_cities"),
    )
    op.create_index("ix_cafe_city_aliases_city_key", "cafe_city_aliases", ["city_key"])
    cafes = op.create_table(
        "cafes",
        sa.Column("id", sa.String(80), nullable=False),
        sa.Column("city_key", sa.String(40), nullable=False),
        sa.Column("name", sa.String(120), nullable=False),
        sa.Column("address", sa.String(200), nullable=False),
        sa.Column("neighborhood", sa.String(120)),
        sa.Column("since", sa.Integer),
        sa.Column("specialty", sa.Text),
        sa.PrimaryKeyConstraint("id", name="pk_cafes"),
        sa.ForeignKeyConstraint(["city_key"], ["cafe_cities.key"], ondelete="CASCADE",
                                name="fk_cafes_city_key_cafe_cities"),
    )
    op.create_index("ix_cafes_city_key", "cafes", ["city_key"])

    from app.features.cafes.service import normalize_city

    data = json.loads(DATA.read_text(encoding="utf-8"))
    op.bulk_insert(cities, [{"key": c["key"], "name": c["name"], "country": c["country"]} for c in data["cities"]])
    alias_rows: dict[str, str] = {}
    for c in data["cities"]:
        for alias in [c["name"], c["key"].replace("-", " "), *c.get("aliases", [])]:
            alias_rows.setdefault(normalize_city(alias), c["key"])
    op.bulk_insert(aliases, [{"alias": a, "city_key": k} for a, k in sorted(alias_rows.items())])
    op.bulk_insert(cafes, [
        {"id": cafe["id"], "city_key": c["key"], "name": cafe["name"], "address": cafe["address"],
         "neighborhood": cafe.get("neighborhood"), "since": cafe.get("since"), "specialty": cafe.get("specialty")}
        for c in data["cities"] for cafe in c["cafes"]
    ])


def downgrade() -> None:
    op.drop_table("cafes")
    op.drop_table("cafe_city_aliases")
    op.drop_table("cafe_cities")
