"""Each account's settings at rest (app/preferences): written again and again on SQLite and
PostgreSQL (CI runs this module on both), and deleted with the account even when a write for it
is still running."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from app.authserver.accounts import Directory, create_account, delete_account
from app.db import Database
from app.preferences import Preferences
from app.preferences.store import PreferenceRepository

pytestmark = [pytest.mark.authserver]


def _account(db: Database) -> str:
    name = f"prefs{uuid.uuid4().hex[:8]}"
    return db.write_sync(lambda uow: create_account(uow, name, "a-long-test-password")).id


def test_a_setting_written_again_with_the_same_value_or_another_keeps_one_row(db: Database):
    account = _account(db)
    for value in ("Oslo", "Oslo", {"nested": [1, "ü"]}, 7):
        db.write_sync(lambda uow, value=value: uow.repository(PreferenceRepository).put(
            account, {"home_city": value, "zoo_count": 4}))
        stored = db.read_sync(lambda uow: uow.repository(PreferenceRepository).values(account))
        assert stored == {"home_city": value, "zoo_count": 4}


def test_a_write_still_running_when_the_account_is_deleted_is_deleted_with_it(db: Database):
    """The write share-locks the account (``holds``) and has not committed when the deletion
    starts: the deletion locks the row first, so it waits, and its ``forget`` sees the write."""
    account = _account(db)
    directory = Directory()
    written, release = threading.Event(), threading.Event()

    def write(uow):
        assert directory.holds(uow, account)
        uow.repository(PreferenceRepository).put(account, {"home_city": "Oslo"})
        written.set()
        assert release.wait(10)

    writer = threading.Thread(target=lambda: db.write_sync(write))
    writer.start()
    assert written.wait(10)
    deleting = threading.Thread(target=lambda: db.write_sync(
        lambda uow: delete_account(uow, account, Preferences.forget)))
    deleting.start()
    time.sleep(0.3)  # the deletion is waiting for the writer now (or for its turn, on SQLite)
    release.set()
    writer.join(10)
    deleting.join(10)
    assert db.read_sync(lambda uow: uow.repository(PreferenceRepository).values(account)) == {}
