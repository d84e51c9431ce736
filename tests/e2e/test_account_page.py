"""``/account`` against forged forms: a CSRF token is good for the session it was made for, and no other.

The attack (cookie injection from a sibling host, which SameSite=Lax does not stop): the attacker opens the
page with a browser of their own, takes its CSRF cookie and token, plants that cookie in the victim's browser
and has it post the token beside the victim's own session cookie."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.e2e import linking_steps as steps
from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import call_tool

pytestmark = [pytest.mark.demo("recipes"), pytest.mark.authserver]


def _browser(linking: Linking) -> httpx.Client:
    return httpx.Client(base_url=linking.base_url, follow_redirects=False, timeout=15,
                        headers={"accept-language": "en"})


def _fields(html: str, action: str) -> dict[str, str]:
    form = re.search(rf'<form method="post" action="{action}">(.*?)</form>', html, re.S)
    assert form is not None, html
    return dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form.group(1)))


def _disconnect_fields(html: str, grant: str) -> dict[str, str]:
    """The Disconnect form of ``grant``: the account may hold others, listed newest first, and
    grants made in the same second (by other tests on this server) tie on that order."""
    for form in re.findall(r'<form method="post" action="/account/disconnect">(.*?)</form>', html, re.S):
        fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
        if fields.get("grant") == grant:
            return fields
    raise AssertionError(f"no Disconnect form for grant {grant}: {html}")


def _signed_in(linking: Linking, username: str) -> httpx.Client:
    browser = _browser(linking)
    fields = _fields(browser.get("/account").text, "/account/login")
    done = browser.post("/account/login", data={**fields, "username": username, "password": steps.PASSWORD})
    assert done.status_code == 303, done.text
    return browser


def _planted(victim: httpx.Client, attacker: httpx.Client) -> httpx.Client:
    """The victim's browser with the attacker's CSRF cookie planted beside the victim's session cookie."""
    forged = _browser_like(victim)
    forged.cookies.set("account_session", victim.cookies.get("account_session"), domain="127.0.0.1",
                       path="/account")
    forged.cookies.set("account_csrf", attacker.cookies.get("account_csrf"), domain="127.0.0.1", path="/account")
    return forged


def _browser_like(browser: httpx.Client) -> httpx.Client:
    return httpx.Client(base_url=browser.base_url, follow_redirects=False, timeout=15,
                        headers={"accept-language": "en"})


def _status(linking: Linking, access_token: str) -> int:
    return call_tool(linking.resource, "list_saved_recipes", token=access_token).status_code


def test_a_token_and_cookie_of_the_attackers_do_not_disconnect_the_victims_app(linking: Linking):
    _, tokens = steps.linked(linking, username="bob")
    victim = _signed_in(linking, "bob")
    page = victim.get("/account").text
    grant = steps.grant_of(tokens["access_token"])
    attacker = _browser(linking)
    attackers_token = _fields(attacker.get("/account").text, "/account/login")["csrf_token"]
    # The same token, checked against the attacker's own cookie, is good for the sign-in form...
    assert attacker.post("/account/login", data={"csrf_token": attackers_token, "username": "bob",
                                                 "password": "wrong-password"}).status_code == 401
    # ...and for nothing done in the victim's session.
    forged = _planted(victim, attacker)
    refused = forged.post("/account/disconnect", data={"grant": grant, "csrf_token": attackers_token})
    assert refused.status_code == 403, refused.text
    assert _status(linking, tokens["access_token"]) == 200
    # The victim's own page's token works (and only in the victim's session: not in the attacker's).
    own = _disconnect_fields(page, grant)["csrf_token"]
    assert own != attackers_token
    done = victim.post("/account/disconnect", data={"grant": grant, "csrf_token": own})
    assert done.status_code == 303 and done.headers["location"] == "/account?done=disconnected"
    assert _status(linking, tokens["access_token"]) == 401


def test_a_token_and_cookie_of_the_attackers_do_not_sign_the_victim_out(linking: Linking):
    victim = _signed_in(linking, "bob")
    attacker = _signed_in(linking, "alice")  # signed in too: a token of a session of the attacker's own
    attackers_token = _fields(attacker.get("/account").text, "/account/sign-out")["csrf_token"]
    forged = _planted(victim, attacker)
    refused = forged.post("/account/sign-out", data={"csrf_token": attackers_token})
    assert refused.status_code == 403, refused.text
    assert "Bob Builder" in victim.get("/account").text  # still signed in
    # The victim's own sign-out form signs the victim out.
    own = _fields(victim.get("/account").text, "/account/sign-out")["csrf_token"]
    assert victim.post("/account/sign-out", data={"csrf_token": own}).status_code == 303
    assert 'action="/account/login"' in victim.get("/account").text
