"""Who the client is, and the limits every replica shares, tried as an attacker would, against the real server
(``python -m app serve``) over HTTP: forged X-Forwarded-For, a botnet against one account, concurrent guesses,
two replicas on one PostgreSQL/SQLite database and one Redis, an anonymous flood of files, and Redis cut
away by a TCP proxy. Each case is one of issue 16's measurements on 3a7bd3b, which let all of them through."""

from __future__ import annotations

import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import bindparam, create_engine, text

from app.authserver.accounts import create_account
from app.db import Database
from tests.e2e.oauth_client import CHATGPT_REDIRECT, Browser, Pkce, authorize_params, only_form
from tests.e2e.server import LiveServer, free_port
from tests.filehost import FileServer, serving_files
from tests.tcpproxy import proxy_to

# Limits are counted in Redis or in each process; the database only keeps the accounts and files the calls
# use, and which one it is changes no count: CI runs these once, on SQLite.
pytestmark = [pytest.mark.demo("files", "recipes", "search"), pytest.mark.authserver, pytest.mark.any_database]

PASSWORD = "correct horse battery"
Start = Callable[..., LiveServer]


@pytest.fixture
def start(database_url: str, tmp_path: Path) -> Iterator[Start]:
    """Start servers on the session database; all of one test share a var dir (signing keys, form secret)."""
    servers: list[LiveServer] = []

    def launch(workers: int = 1, port: int | None = None, **env: str) -> LiveServer:
        server = LiveServer(database_url, tmp_path / f"server-{len(servers)}.log", workers=workers,
                            port=port or free_port(), extra_env={"APP_VAR_DIR": str(tmp_path / "var"), **env})
        servers.append(server.start())
        return server

    yield launch
    for server in servers:
        server.stop()


@pytest.fixture
def account(database_url: str) -> str:
    """An account of this test's own: locking it out touches no other test."""
    name = f"victim-{uuid.uuid4().hex[:10]}"
    db = Database(database_url)
    try:
        db.write_sync(lambda uow: create_account(uow, name, PASSWORD))
    finally:
        db.dispose()
    return name


def login_form(server: LiveServer, browser: Browser | None = None) -> tuple[Browser, dict[str, Any]]:
    """A browser on the login page of a freshly registered client, and the page's form."""
    browser = browser or Browser(server.base_url)
    client = browser.http.post("/register", json={"redirect_uris": [CHATGPT_REDIRECT],
                                                  "token_endpoint_auth_method": "none"})
    assert client.status_code == 201, client.text
    page = browser.open_authorize(authorize_params(client.json()["client_id"], Pkce.new(), server.mcp_url,
                                                   scope="recipes.read"))
    assert page.status_code == 200, page.text
    return browser, only_form(page.text)


def sign_in(server: LiveServer, browser: Browser, form: dict[str, Any], username: str, password: str,
            forwarded_for: str | None = None) -> httpx.Response:
    """Post the login form to ``server`` (any replica: they share the form secret) with the browser's cookies."""
    headers = {"cookie": "; ".join(f"{c.name}={c.value}" for c in browser.http.cookies.jar)}
    if forwarded_for:
        headers["x-forwarded-for"] = forwarded_for
    response = httpx.post(f"{server.base_url}{form['action']}", headers=headers, timeout=30,
                          data={**form["fields"], "username": username, "password": password})
    browser.http.cookies.update(response.cookies)  # the device cookie of a successful sign-in
    return response


def register(server: LiveServer, forwarded_for: str | None = None) -> int:
    headers = {"x-forwarded-for": forwarded_for} if forwarded_for else {}
    return httpx.post(f"{server.base_url}/register", json={"redirect_uris": [CHATGPT_REDIRECT],
                                                            "token_endpoint_auth_method": "none"},
                      headers=headers, timeout=15).status_code


def call_tool(server: LiveServer, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    response = httpx.post(server.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                          headers={"accept": "application/json, text/event-stream",
                                   "mcp-protocol-version": "2025-06-18"}, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def log_events(server: LiveServer, event: str) -> list[dict[str, Any]]:
    return [e for e in server.settled_log() if e.get("event") == event]


def text_of(result: dict[str, Any]) -> str:
    """What the model reads of a refusal: every block whose audience holds it."""
    return " ".join(c["text"] for c in result["content"]
                    if "assistant" in (c.get("annotations") or {}).get("audience", ["assistant"]))


@pytest.fixture(params=["one process", "two replicas"])
def deploy(request: pytest.FixtureRequest, start: Start) -> Callable[..., list[LiveServer]]:
    """The same deployment as one process (limits counted in it), or as two replicas, one of them with two
    workers, sharing the database and a Redis (three processes counting once). Requests go round them."""

    def servers(workers: int = 2, **env: str) -> list[LiveServer]:
        if request.param == "one process":
            return [start(**env)]
        redis_url = request.getfixturevalue("redis_url")
        port = free_port()
        # One public origin for both, as behind a load balancer: the resource, the issuer, the form secret.
        shared = {"APP_REDIS_URL": redis_url, "APP_REDIS_PREFIX": request.getfixturevalue("redis_prefix"),
                  "APP_BASE_URL": f"http://127.0.0.1:{port}", **env}
        return [start(workers=workers, port=port, **shared), start(**shared)]

    return servers


def turn(servers: list[LiveServer], i: int) -> LiveServer:
    return servers[i % len(servers)]


# -- who the client is ---------------------------------------------------------------------------------------------


def test_a_forwarded_for_header_from_a_peer_that_is_not_a_trusted_proxy_is_not_believed(deploy, account: str):
    # The test connects from 127.0.0.1; here that is not a proxy, so what it writes in the header is ignored.
    servers = deploy(APP_TRUSTED_PROXIES="192.0.2.1", APP_LIMIT_REGISTRATIONS_PER_ADDRESS="20/hour")
    browser, form = login_form(servers[0])  # one registration
    statuses = [register(turn(servers, i), f"198.51.100.{i}") for i in range(24)]
    assert statuses == [201] * 19 + [429] * 5
    guesses = [sign_in(turn(servers, i), browser, form, account, f"wrong-{i}", f"198.51.100.{i}").status_code
               for i in range(15)]
    assert guesses == [401] * 5 + [429] * 10
    clients = {e["client"] for s in servers for e in log_events(s, "http.request") if e["path"] == "/register"}
    assert clients == {"127.0.0.1"}


def test_behind_trusted_proxies_the_client_is_the_right_most_address_they_did_not_write(deploy):
    servers = deploy(APP_TRUSTED_PROXIES="127.0.0.1,10.0.0.0/8", APP_LIMIT_REGISTRATIONS_PER_ADDRESS="20/hour")
    # The client wrote the left-most entries; the edge proxy appended 203.0.113.9, an inner proxy 10.0.0.2.
    statuses = [register(turn(servers, i), f"198.51.100.{i}, 203.0.113.9, 10.0.0.2") for i in range(22)]
    assert statuses == [201] * 20 + [429] * 2
    assert register(servers[-1], "203.0.113.10") == 201  # another client behind the same proxies
    clients = [e["client"] for s in servers for e in log_events(s, "http.request") if e["path"] == "/register"]
    assert sorted(clients) == ["203.0.113.10"] + ["203.0.113.9"] * 22


# -- sign-in -------------------------------------------------------------------------------------------------------


def test_wrong_passwords_from_twelve_addresses_lock_new_sign_ins_but_not_the_owners_browser(deploy, account: str):
    servers = deploy()  # loopback is the trusted proxy: each guess comes from the address it forwards
    owner, owner_form = login_form(servers[0])
    assert sign_in(servers[0], owner, owner_form, account, PASSWORD, "192.0.2.50").status_code == 200
    guesses = []
    for i in range(12):
        browser, form = login_form(servers[0])
        guesses.append(sign_in(turn(servers, i), browser, form, account, f"wrong-{i}", f"198.51.100.{i}").status_code)
    assert guesses == [401] * 10 + [429] * 2
    # The trade-off (docs/oauth.md): a new browser with the right password waits out the window too...
    stranger, form = login_form(servers[0])
    locked = sign_in(servers[-1], stranger, form, account, PASSWORD, "198.51.100.99")
    assert locked.status_code == 429 and 500 <= int(locked.headers["retry-after"]) <= 600
    assert "Too many sign-in attempts" in locked.text
    # ...but the browser its owner signed in with before (its device cookie) is counted apart, and gets in.
    _, owner_form = login_form(servers[0], owner)
    assert sign_in(servers[-1], owner, owner_form, account, PASSWORD, "192.0.2.50").status_code == 200


def test_twenty_concurrent_wrong_passwords_from_one_address_cost_five_password_checks(deploy, account: str):
    servers = deploy()
    browser, form = login_form(servers[0])

    def guess(i: int) -> int:
        return sign_in(turn(servers, i), browser, form, account, "wrong").status_code

    with ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(guess, range(20)))
    assert sorted(statuses) == [401] * 5 + [429] * 15
    checked = [e for s in servers for e in log_events(s, "oauth.login_failed")]
    assert len(checked) == 5  # five passwords hashed and checked, no more


def test_a_successful_sign_in_gives_back_only_its_own_reservation(deploy, account: str):
    servers = deploy(APP_LIMIT_LOGIN_PER_ADDRESS="6/minute")
    browser, form = login_form(servers[0])
    sprayed = [f"sprayed-{i}-{uuid.uuid4().hex[:6]}" for i in range(7)]  # names sprayed from one address
    assert [sign_in(turn(servers, i), browser, form, n, "x").status_code for i, n in enumerate(sprayed[:5])] \
        == [401] * 5
    for i in range(3):  # the attacker's own valid account, signed in between guesses from the same address
        assert sign_in(turn(servers, i), browser, form, account, PASSWORD).status_code == 200
    assert [sign_in(turn(servers, i), browser, form, n, "x").status_code for i, n in enumerate(sprayed[5:])] \
        == [401, 429]


# -- budgets -------------------------------------------------------------------------------------------------------


def test_tool_budgets_hold_across_the_deployment(deploy):
    servers = deploy(APP_TOOL_BUDGETS="search=6/minute")
    searches = [call_tool(turn(servers, i), "search", {"q": "json"}) for i in range(9)]
    assert [bool(r.get("isError")) for r in searches] == [False] * 6 + [True] * 3
    assert "search was not run: this caller used its budget (6 per minute). Retry in" in text_of(searches[-1])
    assert not call_tool(servers[0], "search", {"q": "json"}, {"openai/subject": "someone-else"}).get("isError")


@pytest.fixture
def files() -> Iterator[FileServer]:
    with serving_files() as server:
        yield server


def distinct_file(files: FileServer, size: int) -> dict[str, str]:
    body = secrets.token_hex(8).encode() + b"x" * (size - 16)
    return {"download_url": files.offer(body, "text/plain"), "file_id": f"file_{uuid.uuid4().hex}"}


def test_an_anonymous_flood_of_files_is_refused_at_the_budget_both_file_tools_share(deploy, files: FileServer):
    servers = deploy(1, APP_TOOL_BUDGETS="files=6/10 minutes",
                     APP_OUTBOUND_ALLOWLIST=files.origin.removeprefix("http://"))

    def analyze(i: int) -> dict[str, Any]:
        return call_tool(turn(servers, i), "analyze_file", {"file": distinct_file(files, 100_000)})

    def compare(i: int, n: int) -> dict[str, Any]:
        return call_tool(turn(servers, i), "compare_files", {"files": [distinct_file(files, 10_000) for _ in range(n)]})

    results = [analyze(0), analyze(1), compare(0, 3), compare(1, 2), analyze(0), analyze(1)]
    assert [bool(r.get("isError")) for r in results] == [False, False, False, True, False, True]
    assert ("compare_files was not run: this caller used its files budget (6 per 10 minutes) (this call needs 2)"
            in text_of(results[3]))
    assert "analyze_file was not run: this caller used its files budget" in text_of(results[5])
    assert files.hits == 6  # one fetch a unit; a refused call fetches nothing


def test_the_shipped_analyze_file_budget_stops_the_measured_flood(start: Start, files: FileServer):
    server = start(APP_OUTBOUND_ALLOWLIST=files.origin.removeprefix("http://"))
    results = [call_tool(server, "analyze_file", {"file": distinct_file(files, 1_000_000)}) for _ in range(22)]
    assert [bool(r.get("isError")) for r in results] == [False] * 20 + [True] * 2
    assert "20 per 10 minutes" in text_of(results[-1])
    other = call_tool(server, "analyze_file", {"file": distinct_file(files, 1000)}, {"openai/subject": "another-user"})
    assert not other.get("isError")  # ChatGPT's next anonymous user behind the same address has a budget of its own


def test_the_anonymous_storage_quota_bounds_what_one_caller_keeps(deploy, files: FileServer, database_url: str):
    servers = deploy(1, APP_FILES_ANON_QUOTA="3000000", APP_OUTBOUND_ALLOWLIST=files.origin.removeprefix("http://"))
    sent = [distinct_file(files, size) for size in (900_000, 900_000, 900_000, 900_000, 300_000, 1000)]
    results = [call_tool(turn(servers, i), "analyze_file", {"file": f}) for i, f in enumerate(sent)]
    # 2.7 MB kept; the fourth would make 3.6: refused once weighed; 300 KB still fits; then it is used up.
    assert [bool(r.get("isError")) for r in results] == [False, False, False, True, False, True]
    assert "anonymous uploads from this caller may add at most 3 MB every 1 hour" in text_of(results[3])
    assert "It can be retried in" in text_of(results[5])
    # The way past it is for the model: a second block, which widgets leave out.
    assert results[5]["content"][1]["text"] == ("Ask the user to connect (sign in to) this app: its library keeps "
                                                "files without this quota.")
    assert files.hits == 5  # the last was refused before it was fetched
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            kept = conn.execute(text("SELECT openai_file_id FROM files WHERE openai_file_id IN :ids").bindparams(
                bindparam("ids", expanding=True)), {"ids": [f["file_id"] for f in sent]}).scalars().all()
    finally:
        engine.dispose()
    assert sorted(kept) == sorted(sent[i]["file_id"] for i in (0, 1, 2, 4))


# -- Redis cut away ------------------------------------------------------------------------------------------------


def test_with_redis_cut_away_sign_in_fails_closed_and_the_rest_counts_in_process(start: Start, account: str,
                                                                                 redis_url: str, redis_prefix: str):
    with proxy_to(redis_url) as proxy:
        server = start(APP_REDIS_URL=proxy.url, APP_REDIS_PREFIX=redis_prefix)
        browser, form = login_form(server)
        assert sign_in(server, browser, form, account, "wrong").status_code == 401  # counted in Redis
        proxy.set_mode("refuse")
        closed = sign_in(server, browser, form, account, PASSWORD)
        assert closed.status_code == 503 and closed.headers["retry-after"] == "30"
        assert "The sign-in service is unavailable; please retry shortly." in closed.text
        assert register(server) == 201  # registration and tools count in this process meanwhile
        assert not call_tool(server, "search", {"q": "json"}).get("isError")
        assert [sign_in(server, browser, form, account, PASSWORD).status_code for _ in range(3)] == [503] * 3
        assert len(log_events(server, "limits.shared_store_unavailable")) == 1  # once per outage
        ready = httpx.get(f"{server.base_url}/readyz", timeout=5)  # still in the load balancer, and says why not
        assert ready.status_code == 200 and ready.json()["limits"] == "in-process (redis unreachable)"

        proxy.set_mode("forward")
        for _ in range(40):  # the shared store is tried again 5 s after the last failure
            answer = sign_in(server, browser, form, account, PASSWORD)
            if answer.status_code != 503:
                break
            time.sleep(0.25)  # polling a retry interval, not a test delay
        assert answer.status_code == 200
        assert len(log_events(server, "limits.shared_store_restored")) == 1
        assert httpx.get(f"{server.base_url}/readyz", timeout=5).json()["limits"] == "redis"
        assert not [e for e in log_events(server, "http.request") if e["status"] == 500]
