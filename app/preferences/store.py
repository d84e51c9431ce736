"""The values each account chose, read in the caller's unit of work or on their own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import bindparam, delete, select
from sqlalchemy.orm import Session

from app.db import Database, UnitOfWork
from app.db.upsert import rowcount, upsert
from app.preferences.models import Preference
from app.preferences.values import filled

M = TypeVar("M", bound=BaseModel)
_OF = select(Preference.key, Preference.value).where(Preference.subject == bindparam("subject"))


class PreferenceRepository:
    """Every query is filtered by ``subject``: one account never reads another's settings."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def values(self, subject: str) -> dict[str, Any]:
        return {key: value for key, value in self.session.execute(_OF, {"subject": subject})}

    def put(self, subject: str, changes: Mapping[str, Any]) -> None:
        now = datetime.now(UTC)
        # Every write: its time stamp changes, and PostgreSQL has no `=` for the json value.
        upsert(self.session, Preference.__table__,
               [{"subject": subject, "key": key, "value": value, "updated_at": now}
                for key, value in changes.items()], key=("subject", "key"), only_changed=False)

    def delete_all(self, subject: str) -> int:
        mine = delete(Preference).where(Preference.subject == subject)
        return rowcount(self.session.execute(mine))


class Preferences:
    """What the accounts chose: ``of`` for a feature reading its own group in its unit of work;
    ``read`` and ``update`` for the settings tools (``app.mcp.settings.SettingsStore``).
    ``holds``: refuses a write for an account deleted meanwhile (``app.feature.require_account``,
    given by the composition root)."""

    def __init__(self, db: Database,
                 holds: Callable[[UnitOfWork, str], None] = lambda uow, subject: None) -> None:
        self._db = db
        self._holds = holds

    @staticmethod
    def of(uow: UnitOfWork, subject: str | None, kind: type[M]) -> M:
        """``kind`` as ``subject`` chose it (its defaults for an anonymous caller, no query)."""
        if not subject:
            return kind()
        return filled(kind, uow.repository(PreferenceRepository).values(subject))

    async def read(self, subject: str) -> dict[str, Any]:
        """Every value ``subject`` stored (the registry fills in the defaults)."""
        return await self._db.read(lambda uow: uow.repository(PreferenceRepository).values(subject))

    async def update(self, subject: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Store ``changes`` (validated by the settings' schema); everything stored after."""

        def write(uow: UnitOfWork) -> dict[str, Any]:
            self._holds(uow, subject)
            repository = uow.repository(PreferenceRepository)
            repository.put(subject, changes)
            return repository.values(subject)

        return await self._db.write(write)

    @staticmethod
    def forget(uow: UnitOfWork, subject: str) -> int:
        """An account deleted: its settings go with it."""
        return uow.repository(PreferenceRepository).delete_all(subject)
