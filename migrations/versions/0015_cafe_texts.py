"""cafes: each café's description in the languages other than English

Revision ID: 0015_cafe_texts
Revises: 0014_zoo_animal_texts
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_cafe_texts"
down_revision = "0014_zoo_animal_texts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cafe_texts",
        sa.Column("cafe_id", sa.String(80), nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("specialty", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("cafe_id", "language", name="pk_cafe_texts"),
        sa.ForeignKeyConstraint(["cafe_id"], ["cafes.id"], ondelete="CASCADE",
                                name="fk_cafe_texts_cafe_id_cafes"),
    )


def downgrade() -> None:
    op.drop_table("cafe_texts")
