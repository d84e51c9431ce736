"""What OpenAI's app directory reads from the server when an app is submitted, over real HTTP:
the domain verification token at /.well-known/openai-apps-challenge (set: served; unset: the 404
of any unknown path), and the privacy and terms pages. Served through the compose front too:
tests/e2e/test_front.py."""

from __future__ import annotations

import httpx
import pytest

from app.directory.routes import CHALLENGE_PATH

pytestmark = pytest.mark.any_database


def test_without_a_token_the_challenge_path_is_the_404_of_an_unknown_path(live_server):
    with httpx.Client(base_url=live_server.base_url, timeout=10) as client:
        challenge, unknown = client.get(CHALLENGE_PATH), client.get("/.well-known/no-such-thing")
    assert (challenge.status_code, challenge.text) == (404, "Not Found")
    assert (unknown.status_code, unknown.text) == (404, "Not Found")


@pytest.mark.parametrize(("path", "lang", "heading"), [
    ("/privacy", "fr", "<h1>Politique de confidentialité</h1>"),
    ("/terms", "pt-BR,en;q=0.5", "<h1>Termos de uso</h1>")])
def test_the_privacy_and_terms_pages_are_served(live_server, path, lang, heading):
    answer = httpx.get(f"{live_server.base_url}{path}", headers={"accept-language": lang},
                       timeout=10)
    assert answer.status_code == 200 and heading in answer.text
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
