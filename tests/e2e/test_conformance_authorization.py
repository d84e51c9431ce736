"""The MCP conformance suite's authorization-server scenarios (all of them, in one run: the grant
reads the metadata the first one fetched) against the built-in authorization server: its metadata,
and a whole authorization code grant with PKCE and a resource indicator.

The suite prints the authorization URL and waits on a loopback callback for the code; the test is
the person at the browser: it opens that URL, signs in as a demo account and approves, and the
authorization server's redirect reaches the suite's callback, which then redeems the code."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from tests.e2e import linking_steps as steps
from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import Browser
from tests.e2e.server import free_port
from tests.e2e.test_conformance import NODE, SUITE, suite

pytestmark = [pytest.mark.authserver, pytest.mark.any_database]


def test_every_authorization_server_scenario_passes_with_a_person_signing_in(linking: Linking):
    suite("--version")  # skips (or fails on CI) when the suite is not installed
    port = free_port()
    client_id = steps.register(
        linking, redirect_uris=[f"http://127.0.0.1:{port}/callback"], scope="recipes.read"
    )["client_id"]
    run = subprocess.Popen(
        [
            str(NODE),
            str(SUITE),
            "authorization",
            "--url",
            linking.base_url,
            "--client-id",
            client_id,
            "--resource",
            linking.resource,
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:  # the suite's output, line by line, to a queue read with a deadline
        assert run.stdout is not None
        for out in run.stdout:
            lines.put(out)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []

    def next_line(deadline: float) -> str | None:
        try:
            return lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None

    try:
        deadline = time.monotonic() + 60
        while (line := next_line(deadline)) is not None:
            seen.append(line)
            if line.startswith(f"{linking.base_url}/authorize?"):
                break
        else:
            pytest.fail("the suite printed no authorization URL:\n" + "".join(seen))
        params = dict(parse_qsl(urlsplit(line.strip()).query))
        assert params["code_challenge_method"] == "S256" and params["resource"] == linking.resource
        back = Browser(linking.base_url).sign_in(params, "alice", steps.PASSWORD)
        assert back.startswith(f"http://127.0.0.1:{port}/callback?"), back
        httpx.get(back, timeout=15)  # the browser follows the redirect to the suite's callback
        deadline = time.monotonic() + 60
        while (line := next_line(deadline)) is not None:
            seen.append(line)
        output = re.sub(r"\x1b\[[0-9;]*m", "", "".join(seen))
        assert run.wait(10) == 0, output[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    passed = re.findall(r"^✓ ([a-z-]+): (\d+) passed, 0 failed", output, re.M)
    assert {name for name, count in passed if int(count) > 0} == {
        "authorization-server-metadata-endpoint",
        "authorization-code-grant",
    }, output[-3000:]
