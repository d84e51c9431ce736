"""search: documents table with a full-text index per backend

Revision ID: 0001_search
Revises:
Create Date: 2026-11-29
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_search"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_documents",
        sa.Column("pk", sa.Integer, nullable=False, autoincrement=True),
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("title", sa.String(300), nullable=False),
        sa.Column("url", sa.String(500), nullable=False),
        sa.Column("module", sa.String(120), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("pk", name="pk_search_documents"),
        sa.UniqueConstraint("id", name="uq_search_documents_id"),
    )
    op.create_index("ix_search_documents_module", "search_documents", ["module"])
    if op.get_bind().dialect.name == "postgresql":
        # Dots and underscores split identifiers (json.dumps, get_event_loop) into searchable words.
        op.execute(
            """
            ALTER TABLE search_documents ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
              setweight(to_tsvector('english', translate(title, '._', '  ')), 'A') ||
              setweight(to_tsvector('english', translate(body, '._', '  ')), 'B')
            ) STORED
            """
        )
        op.execute("CREATE INDEX ix_search_documents_tsv ON search_documents USING GIN (tsv)")
    else:
        op.execute(
            "CREATE VIRTUAL TABLE search_documents_fts USING fts5("
            "title, body, content='search_documents', content_rowid='pk', tokenize='porter unicode61')"
        )
        # External-content FTS5 must be kept in step by triggers.
        op.execute(
            "CREATE TRIGGER search_documents_ai AFTER INSERT ON search_documents BEGIN "
            "INSERT INTO search_documents_fts(rowid, title, body) VALUES (new.pk, new.title, new.body); END"
        )
        op.execute(
            "CREATE TRIGGER search_documents_ad AFTER DELETE ON search_documents BEGIN "
            "INSERT INTO search_documents_fts(search_documents_fts, rowid, title, body) "
            "VALUES ('delete', old.pk, old.title, old.body); END"
        )
        op.execute(
            "CREATE TRIGGER search_documents_au AFTER UPDATE ON search_documents BEGIN "
            "INSERT INTO search_documents_fts(search_documents_fts, rowid, title, body) "
            "VALUES ('delete', old.pk, old.title, old.body); "
            "INSERT INTO search_documents_fts(rowid, title, body) VALUES (new.pk, new.title, new.body); END"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        op.execute("DROP TABLE IF EXISTS search_documents_fts")
    op.drop_table("search_documents")
