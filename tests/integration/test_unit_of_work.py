"""The unit of work owns the transaction: explicit commit, rollback otherwise, no lost updates."""

from __future__ import annotations

import anyio
import pytest

from app.db import Database
from app.features.zoo import service as zoo
from app.features.zoo.repository import AnimalRepository

ANIMAL = "king-penguin-admiral"


def _likes(db: Database) -> int:
    return db.read_sync(lambda uow: uow.repository(AnimalRepository).get(ANIMAL).likes)


def test_a_write_is_kept_only_after_an_explicit_commit(db):
    before = _likes(db)
    with db.unit_of_work(write=True) as uow:
        zoo.like(uow, ANIMAL)
    assert _likes(db) == before  # left without commit(): rolled back
    with db.unit_of_work(write=True) as uow:
        zoo.like(uow, ANIMAL)
        uow.commit()
    assert _likes(db) == before + 1


def test_an_exception_rolls_back_everything_the_unit_of_work_did(db):
    before = _likes(db)

    def like_twice_then_fail(uow):
        zoo.like(uow, ANIMAL)
        zoo.like(uow, ANIMAL)
        raise RuntimeError("failed after two writes")

    with pytest.raises(RuntimeError, match="after two writes"):
        db.write_sync(like_twice_then_fail)
    assert _likes(db) == before


def test_a_read_never_commits_even_if_the_callable_changed_something(db):
    before = _likes(db)
    db.read_sync(lambda uow: zoo.like(uow, ANIMAL))
    assert _likes(db) == before


def test_a_unit_of_work_is_used_inside_its_with_block_only(db):
    uow = db.unit_of_work()
    with pytest.raises(RuntimeError, match="inside `with uow:`"):
        uow.repository(AnimalRepository)


def test_twenty_concurrent_writers_on_one_row_lose_no_update_and_see_no_lock_error(db):
    before = _likes(db)
    errors: list[BaseException] = []
    counts: list[int] = []

    async def writer() -> None:
        try:
            counts.append((await db.write(lambda uow: zoo.like(uow, ANIMAL))).likes)
        except BaseException as exc:  # any failure, "database is locked" included, fails the test
            errors.append(exc)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(writer)

    anyio.run(main)
    assert errors == []
    assert _likes(db) == before + 20
    # Each writer saw a distinct count: the read-modify-write ran one at a time.
    assert sorted(counts) == list(range(before + 1, before + 21))
