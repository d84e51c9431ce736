"""The unit of work owns the transaction: explicit commit, rollback otherwise, no lost updates.

On a table of the test's own (a counter, created beside the migrated schema and dropped after), so the
core's guarantees are tested whichever demo features a fork keeps."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import anyio
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, select, update
from sqlalchemy.orm import Session

from app.db import Database
from app.db.uow import UnitOfWork

KEY = "the-row"


@pytest.fixture
def counters(db: Database) -> Iterator[Table]:
    table = Table(f"uow_counters_{uuid.uuid4().hex[:8]}", MetaData(),
                  Column("key", String(40), primary_key=True), Column("count", Integer, nullable=False))
    table.create(db.engine)
    with db.engine.begin() as conn:
        conn.execute(table.insert().values(key=KEY, count=0))
    yield table
    table.drop(db.engine)


@pytest.fixture
def counter_repository(counters: Table) -> type:
    class CounterRepository:
        def __init__(self, session: Session) -> None:
            self.session = session

        def increment(self, key: str) -> int:
            """Read-modify-write under a lock (PostgreSQL row lock; SQLite writers hold the write lock)."""
            current = self.session.execute(select(counters.c.count).where(counters.c.key == key)
                                           .with_for_update()).scalar_one()
            self.session.execute(update(counters).where(counters.c.key == key).values(count=current + 1))
            return current + 1

        def count(self, key: str) -> int:
            return self.session.execute(select(counters.c.count).where(counters.c.key == key)).scalar_one()

    return CounterRepository


def test_a_write_is_kept_only_after_an_explicit_commit(db, counter_repository):
    with db.unit_of_work(write=True) as uow:
        uow.repository(counter_repository).increment(KEY)
    assert db.read_sync(lambda uow: uow.repository(counter_repository).count(KEY)) == 0  # no commit(): rolled back
    with db.unit_of_work(write=True) as uow:
        uow.repository(counter_repository).increment(KEY)
        uow.commit()
    assert db.read_sync(lambda uow: uow.repository(counter_repository).count(KEY)) == 1


def test_an_exception_rolls_back_everything_the_unit_of_work_did(db, counter_repository):
    def increment_twice_then_fail(uow: UnitOfWork) -> None:
        uow.repository(counter_repository).increment(KEY)
        uow.repository(counter_repository).increment(KEY)
        raise RuntimeError("failed after two writes")

    with pytest.raises(RuntimeError, match="after two writes"):
        db.write_sync(increment_twice_then_fail)
    assert db.read_sync(lambda uow: uow.repository(counter_repository).count(KEY)) == 0


def test_a_read_never_commits_even_if_the_callable_changed_something(db, counter_repository):
    db.read_sync(lambda uow: uow.repository(counter_repository).increment(KEY))
    assert db.read_sync(lambda uow: uow.repository(counter_repository).count(KEY)) == 0


def test_a_unit_of_work_is_used_inside_its_with_block_only(db, counter_repository):
    uow = db.unit_of_work()
    with pytest.raises(RuntimeError, match="inside `with uow:`"):
        uow.repository(counter_repository)


def test_twenty_concurrent_writers_on_one_row_lose_no_update_and_see_no_lock_error(db, counter_repository):
    errors: list[BaseException] = []
    counts: list[int] = []

    async def writer() -> None:
        try:
            counts.append(await db.write(lambda uow: uow.repository(counter_repository).increment(KEY)))
        except BaseException as exc:  # any failure, "database is locked" included, fails the test
            errors.append(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(writer)

    anyio.run(main)
    assert errors == []
    assert db.read_sync(lambda uow: uow.repository(counter_repository).count(KEY)) == 20
    # Each writer saw a distinct count: the read-modify-write ran one at a time.
    assert sorted(counts) == list(range(1, 21))
