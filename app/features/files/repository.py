from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from app.db.upsert import rowcount
from app.features.files.models import StoredFile


def _live(now: int):  # noqa: ANN202 (a SQL expression)
    return or_(StoredFile.expires_at.is_(None), StoredFile.expires_at > now)


class FileRepository:
    """Rows of ``files``. Reads for an account filter by ``owner``: one account never sees another's files."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, row: StoredFile) -> None:
        self.session.add(row)

    def flush(self) -> None:
        self.session.flush()

    def owned(self, owner: str, file_id: str, now: int) -> StoredFile | None:
        query = select(StoredFile).where(StoredFile.id == file_id, StoredFile.owner == owner, _live(now))
        return self.session.scalars(query).first()

    def upload_with_content(self, owner: str, sha256: str, now: int) -> StoredFile | None:
        query = (select(StoredFile)
                 .where(StoredFile.owner == owner, StoredFile.sha256 == sha256, StoredFile.kind == "upload",
                        _live(now))
                 .order_by(StoredFile.created_at))
        return self.session.scalars(query).first()

    def report_of(self, parent_id: str) -> StoredFile | None:
        query = select(StoredFile).where(StoredFile.parent_id == parent_id, StoredFile.kind == "report")
        return self.session.scalars(query.order_by(StoredFile.created_at.desc())).first()

    def uploads(self, owner: str, now: int, limit: int) -> list[StoredFile]:
        query = (select(StoredFile)
                 .where(StoredFile.owner == owner, StoredFile.kind == "upload", _live(now))
                 .order_by(StoredFile.created_at.desc(), StoredFile.id).limit(limit))
        return list(self.session.scalars(query))

    def count_uploads(self, owner: str, now: int) -> int:
        query = (select(func.count()).select_from(StoredFile)
                 .where(StoredFile.owner == owner, StoredFile.kind == "upload", _live(now)))
        return int(self.session.scalar(query) or 0)

    def owned_ids(self, owner: str) -> list[str]:
        """Every upload of ``owner``, expired ones too (their reports are their children)."""
        query = select(StoredFile.id).where(StoredFile.owner == owner, StoredFile.kind == "upload")
        return list(self.session.scalars(query))

    def with_children(self, ids: Sequence[str]) -> list[StoredFile]:
        if not ids:
            return []
        query = select(StoredFile).where(or_(StoredFile.id.in_(ids), StoredFile.parent_id.in_(ids)))
        return list(self.session.scalars(query))

    def expired(self, now: int, limit: int) -> list[StoredFile]:
        """Expired rows, uploads and reports alike (a report expires with its upload)."""
        query = (select(StoredFile).where(StoredFile.expires_at.is_not(None), StoredFile.expires_at <= now)
                 .order_by(StoredFile.expires_at).limit(limit))
        return list(self.session.scalars(query))

    def delete(self, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        # Children first: the foreign key cascades too, but not every deployment enforces it the same way.
        self.session.execute(delete(StoredFile).where(StoredFile.parent_id.in_(ids)))
        return rowcount(self.session.execute(delete(StoredFile).where(StoredFile.id.in_(ids)))) or 0

    def referenced(self, keys: Iterable[str]) -> set[str]:
        """Which of these storage keys some row still points at (expired rows included until swept)."""
        keys = list(dict.fromkeys(keys))
        found: set[str] = set()
        for start in range(0, len(keys), 500):
            batch = keys[start:start + 500]
            found.update(self.session.scalars(select(StoredFile.storage_key).where(StoredFile.storage_key.in_(batch))))
        return found

    def totals(self) -> tuple[dict[str, int], int]:
        """Rows by kind (what the libraries and reports hold), and the bytes at rest: each stored object once,
        however many rows share it (objects are content-addressed)."""
        rows = {kind: n for kind, n in self.session.execute(
            select(StoredFile.kind, func.count()).group_by(StoredFile.kind))}
        objects = select(func.max(StoredFile.size).label("size")).group_by(StoredFile.storage_key).subquery()
        stored = self.session.scalar(select(func.coalesce(func.sum(objects.c.size), 0)))
        return rows, int(stored or 0)
