"""Two replicas, as a load balancer sees them: one public URL, one PostgreSQL database, one Redis, one S3 bucket,
the same keys, and a client that goes to one, then the other. An account linked through one calls through the
other; a file kept by one is downloaded through a link the other signs; a revocation through either is honoured
by both; a replica stopped with requests in flight finishes every one it took while the other keeps answering.

The servers are tests/e2e/probe_server.py (serve's HTTP stack with a test-only feature): no demo is needed. On
PostgreSQL only (CI's PostgreSQL leg), as a fleet is deployed: SQLite is one machine's database."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest

from tests.conftest import redis_keys
from tests.e2e.linking_steps import refused_within
from tests.e2e.oauth_client import CHATGPT_REDIRECT, Browser, Pkce, authorize_params, code_grant, query_of, token
from tests.e2e.server import LiveServer, free_port
from tests.filehost import FileServer, serving_files
from tests.s3server import make_bucket, s3_server

PASSWORD = "demo-password"
HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


@dataclass
class Fleet:
    a: LiveServer
    b: LiveServer
    public: str  # the one URL both advertise: the load balancer's
    files: FileServer

    @property
    def resource(self) -> str:
        return f"{self.public}/mcp"


@pytest.fixture(scope="module")
def fleet(database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Started once for the module; its last test stops replica A."""
    if not database_url.startswith("postgresql"):
        pytest.skip("a fleet shares a PostgreSQL database (CI's PostgreSQL leg runs this)")
    public = f"http://127.0.0.1:{free_port()}"
    tmp_path = tmp_path_factory.mktemp("fleet")
    with s3_server() as s3, serving_files() as files, redis_keys(redis_url) as redis_prefix:
        make_bucket(s3.endpoint_url, "fleet")
        env = {"APP_BASE_URL": public, "APP_VAR_DIR": str(tmp_path / "var"),  # one set of keys, one form secret
               "APP_REDIS_URL": redis_url, "APP_REDIS_PREFIX": redis_prefix,
               "APP_STORAGE_BACKEND": "s3", "APP_S3_BUCKET": "fleet", "APP_S3_ENDPOINT_URL": s3.endpoint_url,
               "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://"), "APP_SHUTDOWN_GRACE": "10"}
        a = LiveServer(database_url, tmp_path / "a.log", module="tests.e2e.probe_server", extra_env=env)
        b = LiveServer(database_url, tmp_path / "b.log", module="tests.e2e.probe_server", extra_env=env)
        a.start()  # the first writes the keys; the second reads them
        try:
            b.start()
            yield Fleet(a, b, public, files)
        finally:
            a.stop()
            b.stop()


def call(server: LiveServer, name: str, arguments: dict, bearer: str | None = None) -> httpx.Response:
    headers = {**HEADERS, **({"authorization": f"Bearer {bearer}"} if bearer else {})}
    return httpx.post(server.mcp_url, headers=headers, timeout=30,
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}})


def structured(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert not result.get("isError"), result
    return result["structuredContent"]


def test_linked_on_one_replica_called_on_the_other_and_revoked_through_either(fleet: Fleet):
    a, b = fleet.a, fleet.b
    client = httpx.post(f"{a.base_url}/register", timeout=15, json={
        "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none", "scope": "probe.read"})
    assert client.status_code == 201, client.text
    client_id, pkce = client.json()["client_id"], Pkce.new()
    # Signed in on A (its login and consent forms), the code exchanged on B.
    location = Browser(a.base_url).sign_in(authorize_params(client_id, pkce, fleet.resource, scope="probe.read"),
                                           "alice", PASSWORD)
    issued = token(b.base_url, code_grant(query_of(location)["code"], pkce, fleet.resource, client_id=client_id))
    assert issued.status_code == 200, issued.text
    tokens = issued.json()
    for server in (a, b):
        assert structured(call(server, "probe_notes", {}, tokens["access_token"]))["notes"], server.base_url
    # Refreshed on A, the new token used on B; the refresh token rotated by A is refused by B (reuse).
    refreshed = token(a.base_url, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
                                   "client_id": client_id})
    assert refreshed.status_code == 200, refreshed.text
    new = refreshed.json()
    assert structured(call(b, "probe_notes", {}, new["access_token"]))["notes"]
    # Revoked through B: B refuses the access token of that grant at once, A when Redis tells it (well inside
    # the grant cache's 5 s, the bound without Redis).
    revoked = httpx.post(f"{b.base_url}/revoke", timeout=15,
                         data={"token": new["refresh_token"], "client_id": client_id})
    assert revoked.status_code == 200, revoked.text
    refused = call(b, "probe_notes", {}, new["access_token"])
    assert refused.status_code == 401, refused.text
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    refused_within(2, lambda: call(a, "probe_notes", {}, new["access_token"]).status_code)
    again = token(a.base_url, {"grant_type": "refresh_token", "refresh_token": new["refresh_token"],
                               "client_id": client_id})
    assert (again.status_code, again.json()["error"]) == (400, "invalid_grant")


def test_a_file_kept_by_one_replica_is_downloaded_through_a_link_the_other_signs(fleet: Fleet):
    body = b"kept by A, linked by B " * 100
    url = fleet.files.offer(body, "application/octet-stream")
    kept = structured(call(fleet.a, "probe_fetch", {"url": url}))
    assert kept["size"] == len(body)
    link = structured(call(fleet.b, "probe_link", {"key": kept["key"]}))["url"]
    downloaded = httpx.get(link, timeout=15)
    assert (downloaded.status_code, downloaded.content) == (200, body)


# Last: it stops replica A.
def test_a_replica_stopped_under_load_finishes_what_it_took_while_the_other_answers(fleet: Fleet):
    a, b = fleet.a, fleet.b
    assert a.process is not None
    answered_by_b: list[tuple[float, int]] = []  # when each answer came, and its status
    stop = threading.Event()

    def keep_calling_b() -> None:
        while not stop.is_set():
            status = call(b, "probe_echo", {"text": "still here"}).status_code
            answered_by_b.append((time.monotonic(), status))

    def slow_call() -> tuple[httpx.Response, float]:
        response = call(a, "probe_sleep", {"ms": 3000})
        return response, time.monotonic()

    other = threading.Thread(target=keep_calling_b)
    other.start()
    try:
        with ThreadPoolExecutor(6) as pool:
            in_flight = [pool.submit(slow_call) for _ in range(6)]
            deadline = time.monotonic() + 15
            while len([line for line in a.log_lines() if '"probe.sleeping"' in line]) < 6:  # all six taken by A
                assert time.monotonic() < deadline, "A did not take the six requests"
                time.sleep(0.02)  # waiting for A's log writer, not a test delay
            stopped_at = time.monotonic()
            a.process.send_signal(signal.SIGTERM)  # a rolling deploy, a scale-down, a node drain
            results = [future.result(timeout=30) for future in in_flight]
        exit_code = a.process.wait(timeout=30)
    finally:
        stop.set()
        other.join(timeout=30)
    assert [r.status_code for r, _ in results] == [200] * 6
    assert [structured(r)["slept_ms"] for r, _ in results] == [3000] * 6
    first_done = min(done for _, done in results)
    assert first_done > stopped_at  # the six were in flight when the signal came: finished during the drain
    assert exit_code == 0
    assert {status for _, status in answered_by_b} == {200}
    assert [at for at, _ in answered_by_b if stopped_at < at < first_done], "B answered nothing while A drained"
    events = [json.loads(line) for line in a.log_lines() if line.startswith("{")]
    assert len([e for e in events if e.get("event") == "mcp.tool_call" and e.get("tool") == "probe_sleep"
                and e.get("outcome") == "ok"]) == 6
    with pytest.raises(httpx.ConnectError):  # stopped: nothing listens there any more
        httpx.get(f"{a.base_url}/healthz", timeout=2)
