"""cafes: city names per language, for localized answers

Revision ID: 0006_cafe_city_names
Revises: 0005_search_document_owner
Create Date: 2026-11-30
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_cafe_city_names"
down_revision = "0005_search_document_owner"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cafe_city_names",
        sa.Column("city_key", sa.String(40), nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.PrimaryKeyConstraint("city_key", "language", name="pk_cafe_city_names"),
        sa.ForeignKeyConstraint(["city_key"], ["cafe_cities.key"], ondelete="CASCADE",
                                name="fk_cafe_city_names_city_key_cafe_cities"),
    )


def downgrade() -> None:
    op.drop_table("cafe_city_names")
