"""Accounts and the authorization server's state.

Secrets are never stored: codes, refresh tokens and client secrets are kept as SHA-256
digests (they are long random strings, so a fast hash is enough), passwords as scrypt
hashes. Times are epoch seconds (integers), identical on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base

URL = 2048
# jsonb on PostgreSQL: json has no equality operator, which the upsert of a cached client document needs.
Json = JSON().with_variant(JSONB(), "postgresql")


class Account(Base):
    __tablename__ = "accounts"

    # Opaque and stable (acct_...): the token subject and the profile id; never the username or email.
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    display_name: Mapped[str] = mapped_column(String(120))
    email: Mapped[str | None] = mapped_column(String(254))
    # None: the account signs in only through an upstream identity provider (AccountIdentity).
    password_hash: Mapped[str | None] = mapped_column(String(255))
    is_demo: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[int] = mapped_column(BigInteger)
    disabled_at: Mapped[int | None] = mapped_column(BigInteger)
    # The /account sessions of this account: a session cookie names the epoch it began in; signing out moves it
    # on, ending every session of the account (a copied cookie included).
    session_epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class OAuthClient(Base):
    """A registered client (DCR or ``clients create``) or a cached client metadata document (CIMD)."""

    __tablename__ = "oauth_clients"

    client_id: Mapped[str] = mapped_column(String(URL), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))  # cimd | dcr | static
    client_name: Mapped[str | None] = mapped_column(String(200))
    redirect_uris: Mapped[list[str]] = mapped_column(Json)
    grant_types: Mapped[list[str]] = mapped_column(Json)
    token_endpoint_auth_method: Mapped[str] = mapped_column(String(32))
    scope: Mapped[str | None] = mapped_column(Text)
    jwks_uri: Mapped[str | None] = mapped_column(String(URL))
    jwks: Mapped[dict[str, Any] | None] = mapped_column(Json)
    client_secret_hash: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[int] = mapped_column(BigInteger)
    # CIMD: when the cached document must be fetched again (its HTTP caching headers). DCR: when the client is
    # deleted unless someone links through it first (then None: it stays). Static: None.
    expires_at: Mapped[int | None] = mapped_column(BigInteger, index=True)


class OAuthGrant(Base):
    """One authorization (a consent): every access and refresh token descends from it; revoking it ends them all."""

    __tablename__ = "oauth_grants"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(URL), index=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    scope: Mapped[str] = mapped_column(Text)
    resource: Mapped[str] = mapped_column(String(URL))
    created_at: Mapped[int] = mapped_column(BigInteger)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger)
    # When a token of the grant last opened a tool, to the hour (written at most hourly: never a write per call).
    last_used_at: Mapped[int | None] = mapped_column(BigInteger)


class AccountIdentity(Base):
    """An upstream OpenID Connect identity (issuer, ``sub``) that signs in as an account: the account is found by
    this pair only, never by e-mail (an address can change hands; a ``sub`` is never reassigned)."""

    __tablename__ = "account_identities"

    issuer: Mapped[str] = mapped_column(String(URL), primary_key=True)
    subject: Mapped[str] = mapped_column(String(255), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[int] = mapped_column(BigInteger)
    last_sign_in_at: Mapped[int] = mapped_column(BigInteger)


class AuthorizationCode(Base):
    __tablename__ = "oauth_authorization_codes"

    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(String(URL))
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"), index=True)
    # None when /authorize named none (the client's only URI was used): /token then need not repeat it.
    redirect_uri: Mapped[str | None] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(Text)
    resource: Mapped[str] = mapped_column(String(URL))
    code_challenge: Mapped[str] = mapped_column(String(128))
    code_challenge_method: Mapped[str] = mapped_column(String(8))
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
    # Set on first redemption; a second one revokes the grant it produced (RFC 6749 §4.1.2).
    redeemed_at: Mapped[int | None] = mapped_column(BigInteger)
    grant_id: Mapped[str | None] = mapped_column(String(40))


class RefreshToken(Base):
    __tablename__ = "oauth_refresh_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    grant_id: Mapped[str] = mapped_column(ForeignKey("oauth_grants.id", ondelete="CASCADE"), index=True)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
    created_at: Mapped[int] = mapped_column(BigInteger)
    # Set when exchanged: the token still works for the grace window, then any use revokes the grant.
    rotated_at: Mapped[int | None] = mapped_column(BigInteger)
    # The token issued in exchange: a retry within the grace window replaces it, so one chain stays alive.
    successor_hash: Mapped[str | None] = mapped_column(String(64))


class ClientAssertion(Base):
    """private_key_jwt ``jti`` values seen, kept until the assertion expires (single use, RFC 7523 §3)."""

    __tablename__ = "oauth_client_assertions"

    jti_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[int] = mapped_column(BigInteger, index=True)
