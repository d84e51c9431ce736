"""zoo: animals table

Revision ID: 0002_zoo
Revises: 0001_search
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_zoo"
down_revision = "0001_search"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "zoo_animals",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("species", sa.String(120), nullable=False),
        sa.Column("scientific_name", sa.String(120), nullable=False),
        sa.Column("habitat", sa.Text, nullable=False),
        sa.Column("diet", sa.String(200), nullable=False),
        sa.Column("conservation_status", sa.String(40), nullable=False),
        sa.Column("lifespan_years", sa.Integer, nullable=False),
        sa.Column("weight_kg", sa.Float, nullable=False),
        sa.Column("fun_fact", sa.Text, nullable=False),
        sa.Column("enclosure", sa.String(60), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_zoo_animals"),
        sa.UniqueConstraint("name", name="uq_zoo_animals_name"),
    )


def downgrade() -> None:
    op.drop_table("zoo_animals")
