"""upstream OpenID Connect identities of accounts, password-less accounts, when a grant was last used

Revision ID: 0010_upstream_identities
Revises: 0009_files
Create Date: 2026-12-02
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_upstream_identities"
down_revision = "0009_files"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "account_identities",
        sa.Column("issuer", sa.String(2048), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("account_id", sa.String(40), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("last_sign_in_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("issuer", "subject", name="pk_account_identities"),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE",
                                name="fk_account_identities_account_id_accounts"),
    )
    op.create_index("ix_account_identities_account_id", "account_identities", ["account_id"])
    # batch: SQLite cannot ALTER a column's nullability in place (the table is copied).
    with op.batch_alter_table("accounts") as batch:
        batch.alter_column("password_hash", existing_type=sa.String(255), nullable=True)
        batch.add_column(sa.Column("session_epoch", sa.Integer(), nullable=False, server_default="0"))
    with op.batch_alter_table("oauth_grants") as batch:
        batch.add_column(sa.Column("last_used_at", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("oauth_grants") as batch:
        batch.drop_column("last_used_at")
    # Accounts without a password cannot survive the older schema: they go, with what is theirs, children first
    # (migrations run with SQLite's foreign keys off: nothing cascades by itself).
    gone = "SELECT id FROM accounts WHERE password_hash IS NULL"
    op.execute(f"DELETE FROM oauth_refresh_tokens WHERE grant_id IN (SELECT id FROM oauth_grants WHERE account_id "
               f"IN ({gone}))")
    op.execute(f"DELETE FROM oauth_authorization_codes WHERE account_id IN ({gone})")
    op.execute(f"DELETE FROM oauth_grants WHERE account_id IN ({gone})")
    op.execute(f"DELETE FROM account_identities WHERE account_id IN ({gone})")
    op.execute("DELETE FROM accounts WHERE password_hash IS NULL")
    with op.batch_alter_table("accounts") as batch:
        batch.drop_column("session_epoch")
        batch.alter_column("password_hash", existing_type=sa.String(255), nullable=False)
    op.drop_table("account_identities")
