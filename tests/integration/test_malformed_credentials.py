"""Client credentials no database can look up, at /token, /revoke and /introspect: an OAuth error, never a 500.

An HTTP Basic header that is not base64 of UTF-8, or names a client with a NUL (also %-encoded: authlib decodes
it) or an unpaired surrogate; a client assertion whose ``sub`` holds one. Anonymous callers, no key needed:
each was a 500 with a traceback (a psycopg DataError on PostgreSQL, a UnicodeError on both)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import pytest

from tests.integration.test_client_documents import auth_server

pytestmark = pytest.mark.authserver
ENDPOINTS = ("/token", "/revoke", "/introspect")
BASIC = {"nul": b"dcr_a\x00b:secret", "percent-nul": b"dcr_%00:secret", "surrogate-bytes": b"dcr_\xed\xa0\x80:s",
         "not-utf8": b"dcr_\xff\xfe:secret"}
SUBJECTS = {"nul": "dcr_\u0000", "surrogate": "dcr_\ud800", "document-url": "https://\ud800.example/x"}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _assertion(subject: str) -> str:
    claims = json.dumps({"iss": subject, "sub": subject, "aud": "x", "exp": 9999999999, "jti": "j"}).encode()
    header = _b64(json.dumps({"alg": "ES256"}).encode())
    return f"{header}.{_b64(claims)}.{_b64(b'x' * 64)}"


def test_credentials_no_database_can_look_up_are_invalid_client(database_url: str, tmp_path: Path, json_log):
    form = {"grant_type": "refresh_token", "refresh_token": "rt_x", "token": "x"}
    answers = {}
    with auth_server(database_url, tmp_path / "var") as base_url:
        for endpoint in ENDPOINTS:
            for name, credentials in BASIC.items():
                header = {"authorization": "Basic " + base64.b64encode(credentials).decode()}
                if name == "not-utf8":  # as authlib reads it: a tab after the scheme, a space inside the base64
                    encoded = base64.b64encode(credentials).decode()
                    header = {"authorization": f"Basic\t{encoded[:4]} {encoded[4:]}"}
                answers[endpoint, "basic", name] = httpx.post(base_url + endpoint, data=form, headers=header,
                                                              timeout=10)
            for name, subject in SUBJECTS.items():
                assertion = {"client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                             "client_assertion": _assertion(subject)}
                answers[endpoint, "assertion", name] = httpx.post(base_url + endpoint, data={**form, **assertion},
                                                                   timeout=10)
    outcomes = {key: (r.status_code, r.json().get("error")) for key, r in answers.items()}
    # RFC 6749 5.2: 401 where the client tried the Authorization header, 400 for credentials in the body.
    assert outcomes == {key: (401 if key[1] == "basic" else 400, "invalid_client") for key in answers}, outcomes
    assert [e["event"] for e in json_log() if e.get("level") in ("error", "critical")] == []
