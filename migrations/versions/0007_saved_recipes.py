"""recipes: each account's saved recipes

Revision ID: 0007_saved_recipes
Revises: 0006_cafe_city_names
Create Date: 2026-12-01
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_saved_recipes"
down_revision = "0006_cafe_city_names"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "saved_recipes",
        sa.Column("account", sa.String(255), nullable=False),
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("source_url", sa.String(2048), nullable=True),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("account", "id", name="pk_saved_recipes"),
    )
    op.create_index("ix_saved_recipes_account_saved_at", "saved_recipes", ["account", "saved_at"])


def downgrade() -> None:
    op.drop_index("ix_saved_recipes_account_saved_at", table_name="saved_recipes")
    op.drop_table("saved_recipes")
