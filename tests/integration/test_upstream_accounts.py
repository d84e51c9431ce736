"""The accounts upstream identities reach (keyed by issuer and subject, never by e-mail; one account for a raced
first sign-in), and the migration that made room for them: on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, func, select, text

from app.authserver.accounts import AccountRepository, Directory, account_for_identity
from app.authserver.models import Account
from app.authserver.upstream import Identity
from app.db.migrate import downgrade, upgrade

pytestmark = pytest.mark.authserver


def _identity(issuer: str, subject: str, email: str | None, name: str | None = "Pat") -> Identity:
    return Identity(provider="corp", issuer=issuer, subject=subject, name=name, email=email, email_verified=True)


def test_an_account_is_found_by_issuer_and_subject_never_by_email(db):
    ours = db.write_sync(lambda uow: account_for_identity(uow, _identity("https://a.example", "s-1", "p@x.example")))
    # Another provider's person saying the same address is somebody else (an address can change hands).
    theirs = db.write_sync(lambda uow: account_for_identity(uow, _identity("https://b.example", "s-1",
                                                                           "p@x.example")))
    assert theirs.account_id != ours.account_id
    # The same person with a new address and name is the same account, its profile following the provider's.
    again = db.write_sync(lambda uow: account_for_identity(uow, _identity("https://a.example", "s-1", "new@x.example",
                                                                          "Pat New")))
    assert again.account_id == ours.account_id
    profile = db.read_sync(lambda uow: Directory().profile(uow, ours.account_id))
    assert (profile.email, profile.display_name) == ("new@x.example", "Pat New")


def test_a_first_sign_in_raced_by_another_makes_one_account(db, monkeypatch):
    identity = _identity("https://race.example", "s-9", "r@x.example")
    winner = db.write_sync(lambda uow: account_for_identity(uow, identity))
    # The loser read "no such identity" before the winner committed: its insert finds the row, and its own
    # account is taken back.
    real = AccountRepository.identity
    reads = []

    def stale_first_read(self, issuer, subject):
        reads.append(subject)
        return None if len(reads) == 1 else real(self, issuer, subject)
    monkeypatch.setattr(AccountRepository, "identity", stale_first_read)
    loser = db.write_sync(lambda uow: account_for_identity(uow, identity))
    assert loser.account_id == winner.account_id and len(reads) == 2
    count = db.read_sync(lambda uow: uow.repository(AccountRepository).session.scalar(
        select(func.count()).select_from(Account).where(Account.email == "r@x.example")))
    assert count == 1


def test_downgrading_below_upstream_identities_removes_password_less_accounts_with_what_is_theirs(fresh_database):
    upgrade(fresh_database)
    engine = create_engine(fresh_database)
    with engine.begin() as conn:
        for account, password in (("acct_up", None), ("acct_pw", "scrypt$x")):
            conn.execute(text("INSERT INTO accounts (id, username, display_name, password_hash, is_demo, created_at) "
                              "VALUES (:a, :a, :a, :p, false, 1)"), {"a": account, "p": password})
            conn.execute(text("INSERT INTO oauth_grants (id, client_id, account_id, scope, resource, created_at) "
                              "VALUES (:g, 'c', :a, '', 'r', 1)"), {"g": f"g_{account}", "a": account})
            conn.execute(text("INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at, created_at) "
                              "VALUES (:t, :g, 9, 1)"), {"t": f"t_{account}", "g": f"g_{account}"})
        conn.execute(text("INSERT INTO account_identities (issuer, subject, account_id, provider, created_at, "
                          "last_sign_in_at) VALUES ('https://idp', 's', 'acct_up', 'corp', 1, 1)"))
    downgrade(fresh_database, "0009_files")
    with engine.connect() as conn:
        left = [tuple(conn.execute(text(f"SELECT {column} FROM {table} ORDER BY 1")).scalars()) for table, column in (
            ("accounts", "id"), ("oauth_grants", "id"), ("oauth_refresh_tokens", "token_hash"))]
    engine.dispose()
    assert left == [("acct_pw",), ("g_acct_pw",), ("t_acct_pw",)]
    upgrade(fresh_database)
