"""each account's settings for the app (ChatGPT's structured settings), one row per setting

Revision ID: 0012_preferences
Revises: 0011_unused_clients_expire
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_preferences"
down_revision = "0011_unused_clients_expire"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "preferences",
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("subject", "key", name="pk_preferences"),
    )


def downgrade() -> None:
    op.drop_table("preferences")
