"""cafes: cities, city aliases and cafés

Revision ID: 0003_cafes
Revises: 0002_zoo
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_cafes"
down_revision = "0002_zoo"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cafe_cities",
        sa.Column("key", sa.String(40), nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("country", sa.String(2), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_cafe_cities"),
    )
    op.create_table(
        "cafe_city_aliases",
        sa.Column("alias", sa.String(80), nullable=False),
        sa.Column("city_key", sa.String(40), nullable=False),
        sa.PrimaryKeyConstraint("alias", name="pk_cafe_city_aliases"),
        sa.ForeignKeyConstraint(["city_key"], ["cafe_cities.key"], ondelete="CASCADE",
                                name="fk_cafe_city_aliases_city_key_cafe_cities"),
    )
    op.create_index("ix_cafe_city_aliases_city_key", "cafe_city_aliases", ["city_key"])
    op.create_table(
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


def downgrade() -> None:
    op.drop_table("cafes")
    op.drop_table("cafe_city_aliases")
    op.drop_table("cafe_cities")
