"""Which callers a tool's schemes admit, and the challenge a refused caller gets."""

from __future__ import annotations

import pytest
from mcp.server.auth.provider import AccessToken

from app.auth.schemes import NOAUTH, challenge, oauth2, unmet_scopes, validate


def _token(*scopes: str) -> AccessToken:
    return AccessToken(token="t", client_id="c", scopes=list(scopes), subject="s")


@pytest.mark.parametrize(
    ("security", "token", "unmet"),
    [
        ([NOAUTH], None, None),
        ([NOAUTH, oauth2("a")], None, None),
        ([NOAUTH, oauth2("a")], _token(), None),
        ([oauth2("a", "b")], None, ("a", "b")),
        ([oauth2("a", "b")], _token("a"), ("a", "b")),
        ([oauth2("a", "b")], _token("b", "a", "c"), None),
        ([oauth2()], None, ()),
        ([oauth2()], _token(), None),
        ([oauth2("a"), oauth2("b")], _token("b"), None),
        ([oauth2("a"), oauth2("b")], _token("c"), ("a",)),
    ],
)
def test_any_scheme_admits_and_an_oauth2_scheme_needs_all_its_scopes(security, token, unmet):
    assert unmet_scopes(security, token) == unmet


def test_a_challenge_carries_every_parameter_chatgpt_needs():
    value = challenge("https://h/.well-known/oauth-protected-resource/mcp", ["a.read", "b.write"], "Sign in")
    assert value == ('Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", '
                     'scope="a.read b.write", error="insufficient_scope", error_description="Sign in"')


def test_challenge_text_keeps_to_the_rfc_6750_character_set():
    value = challenge("https://h/x", [], 'Recommend a café: say "hi"\\ \n now')
    assert value.endswith("""error_description="Recommend a cafe: say 'hi'/   now\"""")
    assert "scope=" not in value


@pytest.mark.parametrize("scope", ["two words", 'quo"te', "back\\slash", "café"])
def test_a_scope_outside_the_rfc_6750_character_set_is_refused(scope):
    with pytest.raises(ValueError, match="scope names"):
        validate([oauth2(scope)])
