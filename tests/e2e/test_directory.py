"""What OpenAI's app directory reads from the server when an app is submitted, over real HTTP:
the domain verification token at /.well-known/openai-apps-challenge (set: served; unset: the 404
of any unknown path). Served through the compose front too: tests/e2e/test_front.py."""

from __future__ import annotations

import httpx
import pytest

from app.http.directory import CHALLENGE_PATH

pytestmark = pytest.mark.any_database


def test_without_a_token_the_challenge_path_is_the_404_of_an_unknown_path(live_server):
    with httpx.Client(base_url=live_server.base_url, timeout=10) as client:
        challenge, unknown = client.get(CHALLENGE_PATH), client.get("/.well-known/no-such-thing")
    assert (challenge.status_code, challenge.text) == (404, "Not Found")
    assert (unknown.status_code, unknown.text) == (404, "Not Found")
