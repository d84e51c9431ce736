"""Deleting an account at ``/account``, on the running server: the box must be ticked; then the
account, its grants (their tokens refused at once) and what the features keep for it (its saved
recipes) go in one transaction, the session ends, and the page says so. Another account keeps
everything."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from app.authserver.accounts import create_account
from app.db import Database
from tests.e2e import linking_steps as steps
from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import call_tool

pytestmark = [pytest.mark.demo("recipes", "cafes"), pytest.mark.authserver]
PASSWORD = "a-long-test-password"


def _new_account(linking: Linking) -> tuple[str, str]:
    """A fresh account of the test's own (the demo accounts serve every other test)."""
    name = f"leaver{uuid.uuid4().hex[:8]}"
    db = Database(linking.server.database_url)
    try:
        account = db.write_sync(lambda uow: create_account(uow, name, PASSWORD))
        return name, account.id
    finally:
        db.dispose()


def _fields(html: str, action: str) -> dict[str, str]:
    form = re.search(rf'<form method="post" action="{action}">(.*?)</form>', html, re.S)
    assert form is not None, html
    return dict(re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"', form.group(1)))


def _saved(linking: Linking, token: str, title: str) -> httpx.Response:
    return call_tool(linking.resource, "save_recipe", {"title": title}, token=token)


def test_a_person_deletes_their_account_and_what_was_kept_for_it(linking: Linking):
    name, account_id = _new_account(linking)
    _, tokens = steps.linked(linking, username=name, password=PASSWORD)
    access = tokens["access_token"]
    assert _saved(linking, access, "Kept until the account goes").status_code == 200
    _, others = steps.linked(linking, username="bob")
    assert _saved(linking, others["access_token"], "Bob's own").status_code == 200
    # Settings are kept per account too (app/preferences): the leaver's go, bob's stay.
    for token in (access, others["access_token"]):
        chosen = call_tool(linking.resource, "update_settings", {"set": {"home_city": "Oslo"}},
                           token=token)
        assert chosen.json()["result"]["isError"] is False, chosen.text

    browser = httpx.Client(base_url=linking.base_url, follow_redirects=False, timeout=15,
                           headers={"accept-language": "en"})
    login = _fields(browser.get("/account").text, "/account/login")
    assert browser.post("/account/login", data={**login, "username": name,
                                                "password": PASSWORD}).status_code == 303
    page = browser.get("/account").text
    form = _fields(page, "/account/delete")
    # What a browser sends once the box is ticked: its value beside the hidden token.
    box = re.search(r'<input id="confirm-delete" name="confirm" type="checkbox" value="([^"]+)"',
                    page)
    assert box is not None and set(form) == {"csrf_token"}, page
    form["confirm"] = box.group(1)

    # Another session's token (a forged form): nothing is deleted.
    forged = browser.post("/account/delete", data={**form, "csrf_token": "forged"})
    assert forged.status_code == 403
    # The box not ticked: nothing is deleted.
    unticked = browser.post("/account/delete", data={"csrf_token": form["csrf_token"]})
    assert unticked.status_code == 400
    assert "Tick the box to confirm that your account should be deleted." in unticked.text
    assert call_tool(linking.resource, "list_saved_recipes", token=access).status_code == 200

    done = browser.post("/account/delete", data=form)
    assert (done.status_code, done.headers["location"]) == (303, "/account?done=deleted")
    assert 'account_session=""' in done.headers["set-cookie"]  # the session ended with it
    after = browser.get(done.headers["location"])
    assert "Your account and everything saved for it were deleted." in after.text
    assert call_tool(linking.resource, "list_saved_recipes", token=access).status_code == 401
    # Its row stays as a tombstone with nothing of the person in it: a call still running for
    # the account keeps nothing (tests/integration/test_deleted_account_writes.py).
    assert steps.sql(linking, "SELECT username, display_name, email, password_hash, "
                     "disabled_at IS NOT NULL FROM accounts WHERE id = :id", id=account_id) == [
        (f"deleted-{account_id}", "", None, None, True)]
    assert steps.sql(linking, "SELECT count(*) FROM oauth_grants WHERE account_id = :id",
                     id=account_id) == [(0,)]
    assert steps.sql(linking, "SELECT count(*) FROM saved_recipes WHERE account = :id",
                     id=account_id) == [(0,)]
    assert steps.sql(linking, "SELECT count(*) FROM preferences WHERE subject = :id",
                     id=account_id) == [(0,)]
    assert steps.sql(linking, "SELECT count(*) FROM preferences p JOIN accounts a ON a.id = "
                     "p.subject WHERE a.username = 'bob'") == [(1,)]
    # bob's account, link and recipes are untouched.
    kept = call_tool(linking.resource, "list_saved_recipes", token=others["access_token"])
    assert "Bob's own" in kept.text


def test_a_demo_account_whose_password_is_everyones_is_not_deleted(linking: Linking):
    browser = httpx.Client(base_url=linking.base_url, follow_redirects=False, timeout=15,
                           headers={"accept-language": "en"})
    login = _fields(browser.get("/account").text, "/account/login")
    assert browser.post("/account/login", data={**login, "username": "alice",
                                                "password": steps.PASSWORD}).status_code == 303
    page = browser.get("/account").text
    assert 'action="/account/delete"' not in page  # no form to offer
    token = _fields(page, "/account/sign-out")["csrf_token"]
    refused = browser.post("/account/delete", data={"csrf_token": token, "confirm": "delete"})
    assert refused.status_code == 403
    assert "A demo account cannot be deleted: its password is shared." in refused.text
    assert steps.sql(linking, "SELECT count(*) FROM accounts WHERE username = 'alice' "
                     "AND disabled_at IS NULL") == [(1,)]
