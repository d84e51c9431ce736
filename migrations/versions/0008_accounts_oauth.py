"""accounts and the built-in OAuth authorization server

Revision ID: 0008_accounts_oauth
Revises: 0007_saved_recipes
Create Date: 2026-11-30
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
revision = "0008_accounts_oauth"
down_revision = "0007_saved_recipes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("username", sa.String(64), nullable=False),
        sa.Column("display_name", sa.String(120), nullable=False),
        sa.Column("email", sa.String(254), nullable=True),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("is_demo", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("disabled_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_accounts"),
        sa.UniqueConstraint("username", name="uq_accounts_username"),
    )
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(2048), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("client_name", sa.String(200), nullable=True),
        sa.Column("redirect_uris", JSON, nullable=False),
        sa.Column("grant_types", JSON, nullable=False),
        sa.Column("token_endpoint_auth_method", sa.String(32), nullable=False),
        sa.Column("scope", sa.Text(), nullable=True),
        sa.Column("jwks_uri", sa.String(2048), nullable=True),
        sa.Column("jwks", JSON, nullable=True),
        sa.Column("client_secret_hash", sa.String(64), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("client_id", name="pk_oauth_clients"),
    )
    op.create_table(
        "oauth_grants",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("client_id", sa.String(2048), nullable=False),
        sa.Column("account_id", sa.String(40), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("resource", sa.String(2048), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("revoked_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE",
                                name="fk_oauth_grants_account_id_accounts"),
        sa.PrimaryKeyConstraint("id", name="pk_oauth_grants"),
    )
    op.create_index("ix_oauth_grants_client_id", "oauth_grants", ["client_id"])
    op.create_index("ix_oauth_grants_account_id", "oauth_grants", ["account_id"])
    op.create_table(
        "oauth_authorization_codes",
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("client_id", sa.String(2048), nullable=False),
        sa.Column("account_id", sa.String(40), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=True),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("resource", sa.String(2048), nullable=False),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("code_challenge_method", sa.String(8), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("redeemed_at", sa.BigInteger(), nullable=True),
        sa.Column("grant_id", sa.String(40), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE",
                                name="fk_oauth_authorization_codes_account_id_accounts"),
        sa.PrimaryKeyConstraint("code_hash", name="pk_oauth_authorization_codes"),
    )
    op.create_index("ix_oauth_authorization_codes_account_id", "oauth_authorization_codes", ["account_id"])
    op.create_index("ix_oauth_authorization_codes_expires_at", "oauth_authorization_codes", ["expires_at"])
    op.create_table(
        "oauth_refresh_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("grant_id", sa.String(40), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("rotated_at", sa.BigInteger(), nullable=True),
        sa.Column("successor_hash", sa.String(64), nullable=True),
        sa.ForeignKeyConstraint(["grant_id"], ["oauth_grants.id"], ondelete="CASCADE",
                                name="fk_oauth_refresh_tokens_grant_id_oauth_grants"),
        sa.PrimaryKeyConstraint("token_hash", name="pk_oauth_refresh_tokens"),
    )
    op.create_index("ix_oauth_refresh_tokens_grant_id", "oauth_refresh_tokens", ["grant_id"])
    op.create_index("ix_oauth_refresh_tokens_expires_at", "oauth_refresh_tokens", ["expires_at"])
    op.create_table(
        "oauth_client_assertions",
        sa.Column("jti_hash", sa.String(64), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("jti_hash", name="pk_oauth_client_assertions"),
    )
    op.create_index("ix_oauth_client_assertions_expires_at", "oauth_client_assertions", ["expires_at"])


def downgrade() -> None:
    op.drop_table("oauth_client_assertions")
    op.drop_table("oauth_refresh_tokens")
    op.drop_table("oauth_authorization_codes")
    op.drop_table("oauth_grants")
    op.drop_table("oauth_clients")
    op.drop_table("accounts")
