"""files: uploads handed over by ChatGPT and their analysis reports (bytes in storage, rows here)

Revision ID: 0009_files
Revises: 0008_accounts_oauth
Create Date: 2026-11-30
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_files"
down_revision = "0008_accounts_oauth"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("parent_id", sa.String(40), nullable=True),
        sa.Column("openai_file_id", sa.String(255), nullable=True),
        sa.Column("file_name", sa.String(255), nullable=False),
        sa.Column("claimed_mime_type", sa.String(255), nullable=True),
        sa.Column("mime_type", sa.String(100), nullable=False),
        sa.Column("analysis_kind", sa.String(10), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("storage_key", sa.String(512), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_files"),
        sa.ForeignKeyConstraint(["parent_id"], ["files.id"], name="fk_files_parent_id_files", ondelete="CASCADE"),
    )
    op.create_index("ix_files_owner_created_at", "files", ["owner", "created_at"])
    op.create_index("ix_files_expires_at", "files", ["expires_at"])
    op.create_index("ix_files_storage_key", "files", ["storage_key"])
    op.create_index("ix_files_owner_sha256", "files", ["owner", "sha256"])
    op.create_index("ix_files_parent_id", "files", ["parent_id"])


def downgrade() -> None:
    op.drop_table("files")
