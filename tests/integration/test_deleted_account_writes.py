"""A linked call still running when its account is deleted at /account (its token passed the
check before): what it would keep for the account is refused, in the same transaction that
would have written it, so nothing is left for an account that no longer exists."""

from __future__ import annotations

import time
import uuid

import pytest

from app.authserver.accounts import AccountRepository, Directory, create_account
from app.db import Database
from app.feature import AccountGone
from app.features.files import service as files
from app.features.recipes import service as recipes

pytestmark = [pytest.mark.demo("recipes", "files"), pytest.mark.authserver]


def _account(db: Database) -> str:
    name = f"gone{uuid.uuid4().hex[:8]}"
    return db.write_sync(lambda uow: create_account(uow, name, "a-long-test-password")).id


def _upload(owner: str) -> tuple[files.Upload, files.Report]:
    digest = uuid.uuid4().hex * 2
    return (files.Upload(owner=owner, openai_file_id="f", file_name="n.txt", claimed_mime_type=None,
                         mime_type="text/plain", analysis_kind="text", size=3, sha256=digest,
                         storage_key=f"k/{digest}", summary="s", text="abc"),
            files.Report(file_name="n-analysis.json", size=2, sha256=digest[::-1],
                         storage_key=f"r/{digest}"))


def test_writes_for_an_account_deleted_meanwhile_keep_nothing(db: Database):
    accounts = Directory()
    account = _account(db)
    saved = db.write_sync(lambda uow: recipes.save(uow, account, "Before", accounts=accounts))
    assert saved.created is True
    db.write_sync(lambda uow: uow.repository(AccountRepository).retire(account, int(time.time())))

    with pytest.raises(AccountGone) as gone:
        db.write_sync(lambda uow: recipes.save(uow, account, "After", accounts=accounts))
    assert str(gone.value) == "Your account was deleted: nothing was saved."
    upload, report = _upload(account)
    with pytest.raises(AccountGone):
        db.write_sync(lambda uow: files.record(uow, upload, report, now=int(time.time()),
                                               anon_ttl=60, documents=None, accounts=accounts))
    assert db.read_sync(lambda uow: recipes.saved(uow, account)).recipes == [
        saved.recipe]  # only what was saved before


def test_a_subject_that_is_no_local_account_is_not_held_to_one(db: Database):
    # An identity provider's subject (a test's static token): no row, nothing to hold it to.
    subject = f"idp-{uuid.uuid4().hex[:8]}"
    saved = db.write_sync(lambda uow: recipes.save(uow, subject, "Kept", accounts=Directory()))
    assert saved.created is True
