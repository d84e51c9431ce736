"""An independent OAuth 2 client against the built-in authorization server: oauth4webapi (npm, installed with the
conformance suite under tools/conformance), a library that refuses what the specifications do not allow.

It discovers the server (RFC 8414), registers (RFC 7591), builds a PKCE S256 authorization request with a
resource indicator; the test signs in and consents over HTTP as a person would; the library then checks the
callback (state, RFC 9207 ``iss``), redeems the code, validates the access token as a resource server does
(RFC 9068), refreshes (the token rotates), revokes (RFC 7009) and sees the revoked token refused. A missing
``iss``, a wrong ``state``, a content type or token it does not expect makes it throw (repeated headers reach it
merged by fetch: test_oauth_hardening.py checks those).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.e2e import linking_steps as steps
from tests.e2e.conftest import Linking
from tests.e2e.linking_steps import PASSWORD
from tests.e2e.oauth_client import CHATGPT_REDIRECT, Browser, query_of
from tests.e2e.server import ROOT
from tests.e2e.test_conformance import NODE

pytestmark = [pytest.mark.authserver, pytest.mark.any_database]
CLIENT = ROOT / "tools" / "conformance" / "oauth4webapi_client.mjs"
LIBRARY = ROOT / "tools" / "conformance" / "node_modules" / "oauth4webapi"


def _peer(step: str, data: dict) -> dict:
    proc = subprocess.run([str(NODE), str(CLIENT), step, json.dumps(data)], capture_output=True, text=True,
                          timeout=60, cwd=CLIENT.parent)
    answer = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {"error": proc.stderr}
    assert proc.returncode == 0 and "error" not in answer, answer
    return answer


def test_an_independent_strict_client_links_refreshes_and_revokes(linking: Linking):
    if not (NODE.exists() and LIBRARY.exists()):
        if os.environ.get("CI"):
            pytest.fail("oauth4webapi not installed (run: cd tools/conformance && npm ci)")
        pytest.skip("oauth4webapi not installed")
    started = _peer("start", {"issuer": linking.base_url, "redirect_uri": CHATGPT_REDIRECT,
                              "resource": linking.resource})
    params = query_of(started["authorization_url"])
    callback = Browser(linking.base_url).sign_in(params, "alice", PASSWORD)
    done = _peer("finish", {**started, "callback": callback})
    assert (done["token_type"].lower(), done["aud"], done["client_id"]) == ("bearer", linking.resource,
                                                                             started["client_id"])
    assert done["rotated"] is True and done["after_revocation"] == "invalid_grant"
    [(alice,)] = steps.sql(linking, "SELECT id FROM accounts WHERE username = 'alice'")
    assert done["sub"] == alice and 300 <= done["expires_in"] <= 900
