"""The bound a revocation reaches every server within, across processes: each server keeps what it read of a grant
(not revoked, its account enabled) for APP_OAUTH_GRANT_CACHE_TTL seconds instead of reading it on every call.

Two servers on one database, the same keys and one public URL (two replicas, or two workers: a worker is a process
of its own). The server that revokes refuses the token at once; the other within the TTL without Redis, and as
soon as Redis carries the message with it (the TTL here is a minute, so only the message can explain a refusal
within seconds); a server cut off from Redis catches up when it subscribes again. The servers are
tests/e2e/probe_server.py (serve's HTTP stack with a test-only feature): no demo is needed."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import redis_keys
from tests.e2e.linking_steps import refused_within
from tests.e2e.oauth_client import CHATGPT_REDIRECT, Browser, Pkce, authorize_params, code_grant, query_of, token
from tests.e2e.server import ROOT, LiveServer, free_port
from tests.tcpproxy import proxy_to

pytestmark = [pytest.mark.authserver, pytest.mark.any_database]
PASSWORD = "demo-password"
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
LONG_TTL = 60  # longer than any test here: a refusal within seconds came through Redis
SHORT_TTL = 2


@contextmanager
def two_servers(database_url: str, tmp_path: Path, b_redis_url: str | None = None, **env: str
                ) -> Iterator[tuple[LiveServer, LiveServer, str]]:
    """A and B; B reaches Redis through ``b_redis_url`` when given (a proxy the test can cut)."""
    public = f"http://127.0.0.1:{free_port()}"
    shared = {"APP_BASE_URL": public, "APP_VAR_DIR": str(tmp_path / "var"), **env}
    a = LiveServer(database_url, tmp_path / "a.log", module="tests.e2e.probe_server", extra_env=shared)
    b = LiveServer(database_url, tmp_path / "b.log", module="tests.e2e.probe_server",
                   extra_env={**shared, **({"APP_REDIS_URL": b_redis_url} if b_redis_url else {})})
    a.start()  # the first writes the keys; the second reads them
    try:
        b.start()
        yield a, b, f"{public}/mcp"
    finally:
        a.stop()
        b.stop()


def linked(server: LiveServer, resource: str, username: str = "alice") -> dict:
    client = httpx.post(f"{server.base_url}/register", timeout=15, json={
        "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none", "scope": "probe.read"})
    assert client.status_code == 201, client.text
    client_id, pkce = client.json()["client_id"], Pkce.new()
    location = Browser(server.base_url).sign_in(authorize_params(client_id, pkce, resource, scope="probe.read"),
                                                username, PASSWORD)
    issued = token(server.base_url, code_grant(query_of(location)["code"], pkce, resource, client_id=client_id))
    assert issued.status_code == 200, issued.text
    return {**issued.json(), "client_id": client_id}


def status(server: LiveServer, access_token: str) -> int:
    return httpx.post(server.mcp_url, timeout=15, headers={**HEADERS, "authorization": f"Bearer {access_token}"},
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "probe_notes", "arguments": {}}}).status_code


def revoke(server: LiveServer, tokens: dict) -> None:
    revoked = httpx.post(f"{server.base_url}/revoke", timeout=15,
                         data={"token": tokens["refresh_token"], "client_id": tokens["client_id"]})
    assert revoked.status_code == 200, revoked.text


def test_without_redis_the_server_that_revokes_refuses_at_once_and_the_other_within_the_ttl(
        database_url: str, tmp_path: Path):
    with two_servers(database_url, tmp_path, APP_OAUTH_GRANT_CACHE_TTL=str(SHORT_TTL)) as (a, b, resource):
        tokens = linked(a, resource)
        assert (status(a, tokens["access_token"]), status(b, tokens["access_token"])) == (200, 200)  # both cached
        revoke(a, tokens)
        assert status(a, tokens["access_token"]) == 401
        refused_within(SHORT_TTL + 1, lambda: status(b, tokens["access_token"]))


def test_with_redis_a_revocation_reaches_the_other_server_long_before_its_ttl(
        database_url: str, redis_url: str, tmp_path: Path):
    with redis_keys(redis_url) as prefix, two_servers(
            database_url, tmp_path, APP_OAUTH_GRANT_CACHE_TTL=str(LONG_TTL), APP_REDIS_URL=redis_url,
            APP_REDIS_PREFIX=prefix) as (a, b, resource):
        tokens = linked(a, resource)
        assert (status(a, tokens["access_token"]), status(b, tokens["access_token"])) == (200, 200)
        revoke(a, tokens)
        assert status(a, tokens["access_token"]) == 401
        refused_within(2, lambda: status(b, tokens["access_token"]))


def test_with_redis_users_disable_on_the_command_line_reaches_every_server(
        database_url: str, redis_url: str, tmp_path: Path):
    with redis_keys(redis_url) as prefix, two_servers(
            database_url, tmp_path, APP_OAUTH_GRANT_CACHE_TTL=str(LONG_TTL), APP_REDIS_URL=redis_url,
            APP_REDIS_PREFIX=prefix) as (a, b, resource):
        created = subprocess.run([str(a.python), "-m", "app", "users", "create", "erin", "--password-stdin"],
                                 input=PASSWORD + "\n", cwd=ROOT, env=a.environ_used, capture_output=True, text=True,
                                 timeout=60)
        assert created.returncode == 0, created.stderr
        tokens = linked(a, resource, "erin")
        assert (status(a, tokens["access_token"]), status(b, tokens["access_token"])) == (200, 200)
        disabled = subprocess.run([str(a.python), "-m", "app", "users", "disable", "erin"], cwd=ROOT,
                                  env=a.environ_used, capture_output=True, text=True, timeout=60)
        assert disabled.returncode == 0, disabled.stderr
        assert "its tokens stop working at once on every server sharing APP_REDIS_URL" in disabled.stdout
        for server in (a, b):
            refused_within(2, lambda server=server: status(server, tokens["access_token"]))


def test_a_server_cut_off_from_redis_forgets_what_it_held_when_it_subscribes_again(
        database_url: str, redis_url: str, tmp_path: Path):
    with proxy_to(redis_url) as proxy, redis_keys(redis_url) as prefix, two_servers(
            database_url, tmp_path, b_redis_url=proxy.url, APP_OAUTH_GRANT_CACHE_TTL=str(LONG_TTL),
            APP_REDIS_URL=redis_url, APP_REDIS_PREFIX=prefix) as (a, b, resource):
        tokens = linked(a, resource)
        assert (status(a, tokens["access_token"]), status(b, tokens["access_token"])) == (200, 200)
        proxy.set_mode("refuse")  # B's subscription drops; A's message will not reach it
        revoke(a, tokens)
        assert status(a, tokens["access_token"]) == 401
        assert status(b, tokens["access_token"]) == 200  # B holds the grant's state and heard nothing
        proxy.set_mode("forward")
        # Subscribed again, B drops everything it held: what it missed is gone too. Under load B has been seen to
        # notice the cut only at its connection's 10 s health check, then to subscribe again within a second: the
        # bound here is that, well inside the 60 s TTL (a refusal in it came through the resubscription).
        refused_within(25, lambda: status(b, tokens["access_token"]))
