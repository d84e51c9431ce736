"""zoo: each animal's words in the languages other than English

Revision ID: 0014_zoo_animal_texts
Revises: 0013_cafe_coordinates
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_zoo_animal_texts"
down_revision = "0013_cafe_coordinates"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "zoo_animal_texts",
        sa.Column("animal_id", sa.String(64), nullable=False),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("species", sa.String(120), nullable=False),
        sa.Column("habitat", sa.Text(), nullable=False),
        sa.Column("diet", sa.String(200), nullable=False),
        sa.Column("fun_fact", sa.Text(), nullable=False),
        sa.Column("enclosure", sa.String(60), nullable=False),
        sa.PrimaryKeyConstraint("animal_id", "language", name="pk_zoo_animal_texts"),
        sa.ForeignKeyConstraint(["animal_id"], ["zoo_animals.id"], ondelete="CASCADE",
                                name="fk_zoo_animal_texts_animal_id_zoo_animals"),
    )


def downgrade() -> None:
    op.drop_table("zoo_animal_texts")
