"""cafes: where each café is (latitude and longitude), for the widget's map

Revision ID: 0013_cafe_coordinates
Revises: 0012_preferences
Create Date: 2026-12-04
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_cafe_coordinates"
down_revision = "0012_preferences"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable: the rows exist before the seed step fills them (and a fork's own cafés may have
    # no place yet); the widget leaves a café without one off the map, not off the list.
    with op.batch_alter_table("cafes") as batch:
        batch.add_column(sa.Column("latitude", sa.Float(), nullable=True))
        batch.add_column(sa.Column("longitude", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cafes") as batch:
        batch.drop_column("longitude")
        batch.drop_column("latitude")
