"""search: documents may belong to one account (private) or to nobody (public)

Revision ID: 0005_search_document_owner
Revises: 0004_zoo_animal_likes
Create Date: 2026-11-30
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_search_document_owner"
down_revision = "0004_zoo_animal_likes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN, not a batch table copy: the copy would drop the SQLite FTS triggers.
    op.add_column("search_documents", sa.Column("owner", sa.String(255), nullable=True))
    op.create_index("ix_search_documents_owner", "search_documents", ["owner"])


def downgrade() -> None:
    op.drop_index("ix_search_documents_owner", table_name="search_documents")
    op.execute("ALTER TABLE search_documents DROP COLUMN owner")
