"""zoo: animals table, seeded from data/animals.json

Revision ID: zoo_0001
Revises:
Create Date: 2026-11-29
"""
from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "zoo_0001"
down_revision = None
branch_labels = ("zoo",)
depends_on = None

DATA = Path(__file__).resolve().parents[1] / "data" / "animals.json"


def upgrade() -> None:
    table = op.create_table(
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
    op.bulk_insert(table, json.loads(DATA.read_text(encoding="utf-8")))


def downgrade() -> None:
    op.drop_table("zoo_animals")
