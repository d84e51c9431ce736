"""npm ``oidc-provider`` (OpenID Certified) on loopback, as the upstream provider of the e2e tests
(tools/conformance/oidc_provider.mjs), and a browser that signs in through it."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
import pytest

from tests.e2e.oauth_client import only_form
from tests.e2e.server import ROOT
from tests.e2e.test_conformance import NODE

SCRIPT = ROOT / "tools" / "conformance" / "oidc_provider.mjs"
LIBRARY = ROOT / "tools" / "conformance" / "node_modules" / "oidc-provider"


def require_peer() -> None:
    if not (NODE.exists() and LIBRARY.exists()):
        if os.environ.get("CI"):
            pytest.fail("oidc-provider not installed (run: cd tools/conformance && npm ci)")
        pytest.skip("oidc-provider not installed")


@contextmanager
def openid_provider(clients: list[dict[str, Any]], accounts: dict[str, dict[str, Any]],
                    issued: Path | None = None) -> Iterator[str]:
    """The provider's issuer while it runs. ``issued``: a file it appends each token response to (a JSON line)."""
    require_peer()
    config = {"clients": clients, "accounts": accounts, **({"issued": str(issued)} if issued else {})}
    process = subprocess.Popen([str(NODE), str(SCRIPT), json.dumps(config)],
                               cwd=SCRIPT.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line:
            raise RuntimeError(f"oidc-provider did not start: {process.stderr.read() if process.stderr else ''}")
        yield json.loads(line)["issuer"]
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def through_provider(http: httpx.Client, start: str, login: str) -> httpx.Response:
    """From our "Continue with ..." link to what our callback answers: the provider's login, played by a person
    who types ``login``, then every redirect (the provider's own, back to us) followed by hand."""
    response = http.get(start)
    for _ in range(12):
        if response.status_code in (302, 303):
            location = urljoin(str(response.url), response.headers["location"])
            response = http.get(location)
            continue
        if response.status_code == 200 and "/interaction/" in str(response.url):
            form = only_form(response.text)
            response = http.post(urljoin(str(response.url), form["action"]), data={"login": login})
            continue
        return response
    raise AssertionError("too many redirects")
