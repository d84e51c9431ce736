"""The authorization server's rows: codes, grants, refresh tokens, assertion ids."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import and_, delete, or_, update

from app.authserver.models import Account, AuthorizationCode, ClientAssertion, OAuthGrant, RefreshToken
from app.db.uow import note
from app.db.upsert import insert_if_absent

# What a transaction that ended grants notes for after its commit (``app.db.uow.note``): the ids of the grants it
# revoked, and of the accounts all of whose grants it revoked (the token check caches both: app.authserver.wiring).
REVOKED_GRANTS, REVOKED_ACCOUNTS = "revoked_grants", "revoked_accounts"
# A grant's last use is kept to this resolution: at most one write per grant per period, never one per call.
LAST_USED_RESOLUTION = 3600


def replaced(expires_at: int) -> bool:
    """A refresh token a grace-window retry replaced keeps its expiry, negated: until then, presenting it is
    evidence of a second holder (a natural expiry is never negative)."""
    return expires_at < 0


class GrantRepository:
    def __init__(self, session: Any) -> None:
        self.session = session

    def add(self, row: Any) -> None:
        self.session.add(row)
        self.session.flush()

    def code_for_update(self, code_hash: str) -> AuthorizationCode | None:
        return self.session.get(AuthorizationCode, code_hash, with_for_update=True, populate_existing=True)

    def grant(self, grant_id: str | None) -> OAuthGrant | None:
        return self.session.get(OAuthGrant, grant_id) if grant_id else None

    def refresh(self, token_hash: str) -> RefreshToken | None:
        return self.session.get(RefreshToken, token_hash)

    def refresh_for_update(self, token_hash: str) -> RefreshToken | None:
        return self.session.get(RefreshToken, token_hash, with_for_update=True, populate_existing=True)

    def revoke(self, grant_id: str | None) -> None:
        grant = self.grant(grant_id)
        if grant is not None and grant.revoked_at is None:
            grant.revoked_at = int(time.time())
            self.session.flush()
            note(self.session, REVOKED_GRANTS, grant.id)

    def grant_active(self, grant_id: str, account_id: str) -> bool:
        return self.grant_in_use(grant_id, account_id, int(time.time()))[0]

    def grant_in_use(self, grant_id: str, account_id: str, now: int) -> tuple[bool, bool]:
        """(the grant opens tools for the account, its last use is older than ``LAST_USED_RESOLUTION``)."""
        grant = self.grant(grant_id)
        if grant is None or grant.revoked_at is not None or grant.account_id != account_id:
            return False, False
        account = self.session.get(Account, account_id)
        active = account is not None and account.disabled_at is None
        return active, active and (grant.last_used_at is None or grant.last_used_at <= now - LAST_USED_RESOLUTION)

    def mark_used(self, grant_id: str, now: int) -> None:
        # The condition makes concurrent calls of one worker, or of every replica, write once per period.
        self.session.execute(update(OAuthGrant).where(
            OAuthGrant.id == grant_id, or_(OAuthGrant.last_used_at.is_(None),
                                           OAuthGrant.last_used_at <= now - LAST_USED_RESOLUTION)
        ).values(last_used_at=now))

    def first_use_of_jti(self, jti_hash: str, expires_at: int) -> bool:
        """Record the assertion id; False if it was already there (atomic on both databases)."""
        self.session.execute(delete(ClientAssertion).where(ClientAssertion.expires_at < time.time() - 60))
        return insert_if_absent(self.session, ClientAssertion.__table__,
                                {"jti_hash": jti_hash, "expires_at": expires_at}, key=("jti_hash",))

    def successor_used(self, row: RefreshToken) -> bool:
        # Locked: a refresh of the successor committing meanwhile is seen (PostgreSQL, READ COMMITTED), so a
        # thief's retry racing it cannot leave two chains.
        successor = self.refresh_for_update(row.successor_hash) if row.successor_hash else None
        return successor is not None and successor.rotated_at is not None

    def expire_refresh(self, token_hash: str) -> None:
        """The token a retry inside the grace window replaced: presented later, it proves a second holder."""
        row = self.refresh_for_update(token_hash)
        if row is not None:
            row.expires_at = -abs(row.expires_at)
            self.session.flush()

    def sweep(self) -> None:
        """Forget codes and refresh tokens that can no longer be used (opportunistic, on each new code)."""
        now = int(time.time())
        self.session.execute(delete(AuthorizationCode).where(AuthorizationCode.expires_at < now - 3600))
        self.session.execute(delete(RefreshToken).where(or_(
            and_(RefreshToken.expires_at >= 0, RefreshToken.expires_at < now),
            and_(RefreshToken.expires_at < 0, RefreshToken.expires_at > -now))))
