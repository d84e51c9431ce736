"""Local accounts: who can sign in on the login page, and whose data a token reaches."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app.authserver.models import (
    Account,
    AccountIdentity,
    AuthorizationCode,
    OAuthClient,
    OAuthGrant,
)
from app.authserver.passwords import hash_password
from app.authserver.repository import REVOKED_ACCOUNTS, REVOKED_GRANTS
from app.authserver.upstream import Identity
from app.command import OperatorError
from app.db import UnitOfWork
from app.db.uow import note
from app.db.upsert import insert_if_absent, rowcount
from app.feature import AccountProfile

DEMO_ACCOUNTS = (("alice", "Alice Liddell", "alice@example.com"), ("bob", "Bob Builder", "bob@example.com"))
_USERNAME = re.compile(r"[a-z0-9][a-z0-9._-]{1,63}")
MIN_PASSWORD = 8


class AccountError(OperatorError, ValueError):
    """A refused account operation; the message is for the operator."""


def new_account_id() -> str:
    return "acct_" + secrets.token_urlsafe(16)


def normalise_username(username: str) -> str:
    return username.strip().lower()


class AccountRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, account_id: str) -> Account | None:
        return self.session.get(Account, account_id)

    def by_username(self, username: str) -> Account | None:
        return self.session.scalar(select(Account).where(Account.username == normalise_username(username)))

    def all(self) -> list[Account]:
        return list(self.session.scalars(select(Account).order_by(Account.username)))

    def demo(self) -> list[Account]:
        return list(self.session.scalars(select(Account).where(Account.is_demo.is_(True))))

    def revoke_grants(self, account_id: str, when: int) -> None:
        self.session.execute(update(OAuthGrant).where(OAuthGrant.account_id == account_id,
                                                      OAuthGrant.revoked_at.is_(None)).values(revoked_at=when))
        note(self.session, REVOKED_ACCOUNTS, account_id)

    def hold(self, account_id: str) -> bool:
        """False for a deleted (or disabled) account, its row share-locked until the transaction
        ends (PostgreSQL; SQLite's writers hold the whole database already). An id that names no
        row is no account of this server's: nothing to hold it to."""
        query = (select(Account.disabled_at).where(Account.id == account_id)
                 .with_for_update(read=True))
        found = self.session.execute(query).first()
        return found is None or found.disabled_at is None

    def lock(self, account_id: str) -> None:
        """The account's row locked until the transaction ends (PostgreSQL; SQLite's writers hold
        the whole database already)."""
        self.session.execute(select(Account.id).where(Account.id == account_id).with_for_update())

    def retire(self, account_id: str, when: int) -> None:
        """A deleted account: its grants revoked (every worker hears it) and deleted with their
        refresh tokens, its codes and upstream identities deleted; its row kept as a tombstone
        holding nothing of the person (the opaque id, when), so that a call still running for it
        keeps nothing (``hold``) and its id is never an account again."""
        self.revoke_grants(account_id, when)
        for table in (AuthorizationCode, OAuthGrant, AccountIdentity):
            self.session.execute(delete(table).where(table.account_id == account_id))
        account = self.get(account_id)
        if account is not None:
            account.username = f"deleted-{account_id}"[:64]
            account.display_name, account.email, account.password_hash = "", None, None
            account.is_demo, account.disabled_at = False, when
            account.session_epoch = (account.session_epoch or 0) + 1

    def add(self, account: Account) -> None:
        self.session.add(account)
        self.session.flush()

    def identity(self, issuer: str, subject: str) -> AccountIdentity | None:
        return self.session.get(AccountIdentity, (issuer, subject), populate_existing=True)

    def add_identity(self, values: dict[str, object]) -> bool:
        """False when (issuer, subject) is already there (a concurrent first sign-in won): never an error."""
        return insert_if_absent(self.session, AccountIdentity.__table__, values, key=("issuer", "subject"))

    def remove(self, account: Account) -> None:
        self.session.delete(account)
        self.session.flush()

    def active_grants(self, account_id: str) -> list[tuple[OAuthGrant, OAuthClient | None]]:
        rows = self.session.execute(
            select(OAuthGrant, OAuthClient).outerjoin(OAuthClient, OAuthClient.client_id == OAuthGrant.client_id)
            .where(OAuthGrant.account_id == account_id, OAuthGrant.revoked_at.is_(None))
            .order_by(OAuthGrant.created_at.desc(), OAuthGrant.id))
        return [(grant, client) for grant, client in rows]

    def granted_scopes(self, account_id: str, client_id: str, resource: str) -> set[str]:
        """What the account has already allowed ``client_id`` for ``resource`` (its active grants'
        scopes): a step-up consent shows them apart from what is newly asked."""
        rows = self.session.execute(select(OAuthGrant.scope).where(
            OAuthGrant.account_id == account_id, OAuthGrant.client_id == client_id,
            OAuthGrant.resource == resource, OAuthGrant.revoked_at.is_(None)))
        return {name for (scope,) in rows for name in (scope or "").split()}

    def revoke_grant(self, account_id: str, grant_id: str, when: int) -> bool:
        """End the account's own grant ``grant_id``; False when it has no such active grant."""
        result = self.session.execute(update(OAuthGrant).where(
            OAuthGrant.id == grant_id, OAuthGrant.account_id == account_id, OAuthGrant.revoked_at.is_(None)
        ).values(revoked_at=when))
        if rowcount(result):
            note(self.session, REVOKED_GRANTS, grant_id)
        return bool(rowcount(result))


def create_account(uow: UnitOfWork, username: str, password: str, *, display_name: str | None = None,
                   email: str | None = None, demo: bool = False) -> Account:
    name = normalise_username(username)
    if not _USERNAME.fullmatch(name):
        raise AccountError("username: 2-64 characters, letters, digits, '.', '_' or '-', starting with a letter "
                           "or digit")
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"password: at least {MIN_PASSWORD} characters")
    accounts = uow.repository(AccountRepository)
    if accounts.by_username(name) is not None:
        raise AccountError(f"an account named {name!r} already exists")
    account = Account(id=new_account_id(), username=name, display_name=display_name or name, email=email,
                      password_hash=hash_password(password), is_demo=demo, created_at=int(time.time()))
    accounts.add(account)
    return account


def set_disabled(uow: UnitOfWork, username: str, disabled: bool) -> Account:
    account = uow.repository(AccountRepository).by_username(username)
    if account is None:
        raise AccountError(f"no account named {normalise_username(username)!r}")
    now = int(time.time())
    account.disabled_at = now if disabled else None
    # Its grants end with it: enabling the account again lets it sign in, it does not bring back the tokens of
    # before (whoever held them when it was disabled must link again). On enable too: an account disabled by an
    # older version kept its grants.
    uow.repository(AccountRepository).revoke_grants(account.id, now)
    account.session_epoch = (account.session_epoch or 0) + 1  # its /account sessions end too, for good
    return account


def delete_account(uow: UnitOfWork, account_id: str,
                   forget: Callable[[UnitOfWork, str], int]) -> int:
    """What every feature keeps for the account (``forget``: app.parts.forget_everywhere), then
    the account itself (``retire``), in the caller's transaction: /account and ``users delete``.
    Returns how many items the features deleted."""
    accounts = uow.repository(AccountRepository)
    # First the account's row, locked: a write for it still running (which share-locked it,
    # ``hold``) commits before ``forget`` looks, and one arriving later waits, then finds the
    # account gone. Otherwise ``forget`` would miss the rows of a write committed after it read.
    accounts.lock(account_id)
    kept = forget(uow, account_id)
    accounts.retire(account_id, int(time.time()))
    return kept


@dataclass(frozen=True)
class SignedIn:
    account_id: str
    display_name: str
    enabled: bool


def account_for_identity(uow: UnitOfWork, identity: Identity) -> SignedIn:
    """The account an upstream identity signs in as, made on its first sign-in; its name and e-mail follow the
    provider's on every sign-in (what the profile tool shows). Keyed by (issuer, sub) only: a second provider
    saying the same e-mail address is a second account."""
    accounts = uow.repository(AccountRepository)
    now = int(time.time())
    link = accounts.identity(identity.issuer, identity.subject)
    if link is None:
        name = identity.name or identity.email or identity.provider
        # No password: this account opens only through its provider. The username is what operators type
        # (`users disable`); it says nothing of the person.
        created = Account(id=new_account_id(), username=f"{identity.provider}.{secrets.token_hex(5)}",
                          display_name=name[:120], email=identity.email, password_hash=None, is_demo=False,
                          created_at=now)
        accounts.add(created)
        if not accounts.add_identity({"issuer": identity.issuer, "subject": identity.subject,
                                      "account_id": created.id, "provider": identity.provider,
                                      "created_at": now, "last_sign_in_at": now}):
            accounts.remove(created)  # a concurrent first sign-in made it: that one is the account
        link = accounts.identity(identity.issuer, identity.subject)
        assert link is not None, "the identity row was just written or found"
    account = accounts.get(link.account_id)
    assert account is not None, "the foreign key holds"
    link.last_sign_in_at = now
    if identity.name:
        account.display_name = identity.name[:120]
    if identity.email:
        account.email = identity.email
    return SignedIn(account.id, account.display_name, account.disabled_at is None)


def seed_demo_accounts(uow: UnitOfWork, password: str) -> str:
    """alice and bob, created once (their ids then stay); an existing demo account keeps its password."""
    accounts = uow.repository(AccountRepository)
    created = [username for username, display, email in DEMO_ACCOUNTS if accounts.by_username(username) is None
               and create_account(uow, username, password, display_name=display, email=email, demo=True)]
    return f"demo accounts {', '.join(created)} created" if created else "demo accounts present"


def _profile(account: Account) -> AccountProfile:
    return AccountProfile(id=account.id, username=account.username, display_name=account.display_name,
                          email=account.email)


class Directory:
    """The accounts as the other parts see them (app.feature.LocalAccounts)."""

    def profile(self, uow: UnitOfWork, subject: str) -> AccountProfile | None:
        account = uow.repository(AccountRepository).get(subject)
        return _profile(account) if account is not None else None

    def demo(self, uow: UnitOfWork) -> list[AccountProfile]:
        return [_profile(account) for account in uow.repository(AccountRepository).demo()]

    def holds(self, uow: UnitOfWork, subject: str) -> bool:
        return uow.repository(AccountRepository).hold(subject)
