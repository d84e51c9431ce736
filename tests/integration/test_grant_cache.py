"""The token check's grant state (app.authserver.wiring.grant_check) on a real database: read once per TTL, not
once per call; forgotten as soon as a revocation in this process commits, or its message arrives. The bound
across processes: tests/e2e/test_revocation_bound.py."""

from __future__ import annotations

import secrets
import time

import pytest
from sqlalchemy import event

from app.authserver.accounts import AccountRepository, create_account, set_disabled
from app.authserver.models import OAuthGrant
from app.authserver.repository import GrantRepository
from app.authserver.wiring import REVOCATIONS, grant_check, publish_revocations
from app.broadcast import Broadcast
from app.db import Database

pytestmark = [pytest.mark.authserver, pytest.mark.any_database, pytest.mark.anyio]


class Reads:
    """Statements on the grants table, as the database sees them."""

    def __init__(self, db: Database) -> None:
        self.count = 0
        event.listen(db.engine, "before_cursor_execute", self._seen)

    def _seen(self, conn, cursor, statement: str, *args) -> None:
        if "FROM oauth_grants" in statement:
            self.count += 1


def new_grant(db: Database) -> tuple[str, str]:
    def make(uow):
        account = create_account(uow, f"gc-{secrets.token_hex(4)}", secrets.token_urlsafe(12))
        grant_id = secrets.token_hex(8)
        uow.repository(GrantRepository).add(OAuthGrant(
            id=grant_id, client_id="c", account_id=account.id, scope="recipes.read", resource="r",
            created_at=int(time.time()), last_used_at=int(time.time())))
        return grant_id, account.id

    return db.write_sync(make)


async def test_a_grant_is_read_once_per_ttl_not_once_per_call(db: Database):
    grant_id, account_id = new_grant(db)
    check = grant_check(db, Broadcast(), ttl=60)
    reads = Reads(db)
    assert [await check(grant_id, account_id) for _ in range(20)] == [True] * 20
    assert reads.count == 1
    # Revoked behind the server's back (no note, no message): the state it holds is what it answers until the TTL.
    db.write_sync(lambda uow: uow.repository(GrantRepository).grant(grant_id).__setattr__("revoked_at", 1))
    before = reads.count
    assert await check(grant_id, account_id) is True
    assert reads.count == before


async def test_a_revocation_committed_in_this_process_is_seen_by_the_next_call(db: Database):
    broadcast = Broadcast()
    publish_revocations(db, broadcast)
    check = grant_check(db, broadcast, ttl=60)
    kept, kept_account = new_grant(db)
    ended, ended_account = new_grant(db)
    assert await check(kept, kept_account) and await check(ended, ended_account)
    await db.write(lambda uow: uow.repository(GrantRepository).revoke(ended))
    assert await check(ended, ended_account) is False
    reads = Reads(db)
    assert await check(kept, kept_account) is True and reads.count == 0  # the other grant's state is kept


async def test_disabling_an_account_forgets_every_grant_of_it(db: Database):
    broadcast = Broadcast()
    publish_revocations(db, broadcast)
    check = grant_check(db, broadcast, ttl=60)
    grant_id, account_id = new_grant(db)
    assert await check(grant_id, account_id) is True
    username = db.read_sync(lambda uow: uow.repository(AccountRepository).get(account_id).username)
    await db.write(lambda uow: set_disabled(uow, username, True))
    assert await check(grant_id, account_id) is False


async def test_a_write_that_rolls_back_tells_no_one(db: Database):
    broadcast = Broadcast()
    heard: list[str | None] = []
    broadcast.subscribe(REVOCATIONS, heard.append)
    publish_revocations(db, broadcast)
    grant_id, _ = new_grant(db)

    def revoke_then_fail(uow):
        uow.repository(GrantRepository).revoke(grant_id)
        raise ValueError("after the revocation, before the commit")

    with pytest.raises(ValueError):
        await db.write(revoke_then_fail)
    assert heard == []
    await db.write(lambda uow: uow.repository(GrantRepository).revoke(grant_id))
    assert heard == [f"grant {grant_id}"]


async def test_a_message_from_another_process_forgets_that_grant_and_a_lost_subscription_forgets_all(db: Database):
    broadcast = Broadcast()
    check = grant_check(db, broadcast, ttl=60)
    one, one_account = new_grant(db)
    two, two_account = new_grant(db)
    assert await check(one, one_account) and await check(two, two_account)
    for grant_id in (one, two):
        db.write_sync(lambda uow, g=grant_id: uow.repository(GrantRepository).grant(g).__setattr__("revoked_at", 1))
    broadcast._deliver(REVOCATIONS, f"grant {one}")  # what the listener does with a message from Redis
    assert (await check(one, one_account), await check(two, two_account)) == (False, True)
    broadcast._deliver(REVOCATIONS, None)  # subscribed again after a cut: anything may have been missed
    assert await check(two, two_account) is False

