"""zoo: a likes counter per animal

Revision ID: 0004_zoo_animal_likes
Revises: 0003_cafes
Create Date: 2026-11-30
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_zoo_animal_likes"
down_revision = "0003_cafes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("zoo_animals") as batch:
        batch.add_column(sa.Column("likes", sa.Integer, nullable=False, server_default=sa.text("0")))


def downgrade() -> None:
    with op.batch_alter_table("zoo_animals") as batch:
        batch.drop_column("likes")
