"""Outages, a schema behind the code, and bugs: each reported as what it is, never a 500.

Readiness answers within its deadline whatever the database does; tools say
"unavailable, retry" only for connection-level failures, "not migrated" when the
schema is behind, and a generic failure (traceback in the log) for anything else.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import anyio
import pytest
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from app.auth.schemes import NOAUTH
from app.db import Database
from app.db.database import READINESS_REUSE_S
from app.db.migrate import upgrade
from app.feature import Deps, Feature
from app.main import create_app
from app.mcp.registry import ToolRegistry
from app.settings import load_settings
from tests.conftest import empty_database

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
POSTGRES = bool(os.environ.get("APP_TEST_DATABASE_URL"))


class _Probe:
    def __init__(self, session) -> None:
        self.session = session

    def revision(self) -> str:
        return self.session.execute(text("SELECT version_num FROM alembic_version")).scalar_one()

    def newer_table(self) -> int:  # what code needs from a migration the database has not run yet
        return self.session.execute(text("SELECT count(*) FROM table_from_a_newer_migration")).scalar_one()


def _tools(registry: ToolRegistry, deps: Deps) -> None:
    common = dict(read_only=True, destructive=False, open_world=False, security=[NOAUTH])

    @registry.tool(name="revision", title="Revision", description="reads the database", **common)
    async def revision() -> str:
        return await deps.db.read(lambda uow: uow.repository(_Probe).revision())

    @registry.tool(name="newer", title="Newer", description="needs a newer schema", **common)
    async def newer() -> int:
        return await deps.db.read(lambda uow: uow.repository(_Probe).newer_table())


PROBES = [Feature(name="probes", tools=_tools)]


def _call(client: TestClient, name: str, arguments: dict) -> dict:
    resp = client.post("/mcp", headers=HEADERS, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
    assert resp.status_code == 200
    return resp.json()["result"]


@pytest.fixture
def black_hole() -> Iterator[int]:
    """A loopback TCP port that accepts connections and never says a word (a hung server)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    listener.close()


def test_readiness_reports_a_refused_connection_while_liveness_stays_ok(settings):
    db = Database("postgresql+psycopg://nobody@127.0.0.1:1/none")  # port 1 refuses at once
    with TestClient(create_app(settings, db=db), base_url=settings.base_url) as client:
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.headers["retry-after"] == "5"
    assert ready.json() == {"status": "unavailable", "database": "unreachable", "schema": "unknown",
                            "limits": "in-process"}


def test_readiness_answers_503_within_3_seconds_when_postgres_hangs(settings, black_hole):
    db = Database(f"postgresql+psycopg://nobody@127.0.0.1:{black_hole}/none")
    with TestClient(create_app(settings, db=db), base_url=settings.base_url) as client:
        started = time.monotonic()
        ready = client.get("/readyz")
        elapsed = time.monotonic() - started
    assert ready.status_code == 503 and ready.json()["database"] == "unreachable"
    assert elapsed < 3.0, f"readiness took {elapsed:.2f}s"


def test_readiness_keeps_its_deadline_even_when_the_driver_ignores_its_own(settings, monkeypatch):
    db = Database(settings.database_url)
    monkeypatch.setattr(db, "_probe_sync", lambda: time.sleep(5))  # a driver stuck past every timeout

    async def probe():
        started = time.monotonic()
        state = await db.readiness(deadline=0.5)
        return state, time.monotonic() - started

    state, elapsed = anyio.run(probe)
    assert (state.database, state.ready) == ("timeout", False)
    assert elapsed < 1.5
    db.dispose()


@pytest.mark.skipif(not POSTGRES, reason="statement_timeout is PostgreSQL's server-side deadline")
def test_readiness_gives_up_on_a_postgres_statement_stuck_behind_a_lock(database_url, settings):
    locker = create_engine(database_url)
    with locker.connect() as conn:
        conn.execute(text("LOCK TABLE alembic_version IN ACCESS EXCLUSIVE MODE"))
        db = Database(database_url)
        with TestClient(create_app(settings, db=db), base_url=settings.base_url) as client:
            started = time.monotonic()
            ready = client.get("/readyz")
            elapsed = time.monotonic() - started
        conn.rollback()
    locker.dispose()
    assert ready.status_code == 503 and ready.json()["database"] == "unreachable"
    assert elapsed < 3.0, f"readiness took {elapsed:.2f}s"


def test_a_tool_call_during_an_outage_says_to_retry(settings):
    db = Database("postgresql+psycopg://nobody@127.0.0.1:1/none")
    with TestClient(create_app(settings, db=db, features=PROBES), base_url=settings.base_url) as client:
        result = _call(client, "revision", {})
        listing = client.post("/mcp", headers=HEADERS, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert result["isError"] is True and "structuredContent" not in result
    assert result["content"][0]["text"] == "The database is unavailable, please retry shortly."
    assert listing.status_code == 200 and listing.json()["result"]["tools"]


@pytest.fixture
def unmigrated_url(tmp_path) -> Iterator[str]:
    url, drop = empty_database(tmp_path, "unmigrated")
    yield url
    drop()


def test_an_unmigrated_database_is_not_ready_and_tools_say_what_to_run(unmigrated_url):
    settings = load_settings(database_url=unmigrated_url, _env_file=None)
    with TestClient(create_app(settings, features=PROBES), base_url=settings.base_url) as client:
        ready = client.get("/readyz")
        result = _call(client, "revision", {})
    assert ready.status_code == 503
    assert ready.json() == {"status": "unavailable", "database": "ok", "schema": "not migrated",
                            "limits": "in-process", "hint": "run `python -m app migrate`"}
    assert result["isError"] is True
    assert result["content"][0]["text"] == ("The server's database schema is not up to date; an "
                                            "operator must run `python -m app migrate`.")


def test_a_database_behind_the_code_is_not_ready_and_says_so(unmigrated_url):
    upgrade(unmigrated_url, "0001_search")  # behind the head revision
    settings = load_settings(database_url=unmigrated_url, _env_file=None)
    with TestClient(create_app(settings, features=PROBES), base_url=settings.base_url) as client:
        ready = client.get("/readyz")
        result = _call(client, "newer", {})
        upgrade(unmigrated_url)
        time.sleep(READINESS_REUSE_S)  # the answer above is given to the probes of the next second
        ready_after = client.get("/readyz")
        at_head = _call(client, "newer", {})
    assert ready.status_code == 503 and ready.json()["schema"] == "behind"
    assert "not up to date" in result["content"][0]["text"]
    assert ready_after.status_code == 200 and ready_after.json() == {"status": "ready", "database": "ok",
                                                                     "schema": "ok", "limits": "in-process"}
    # At head, a missing table is the code's bug, not the operator's: no "run migrate" advice.
    assert at_head["content"][0]["text"] == ("Newer failed on the server before it finished; the "
                                             "failure is logged for the operator.")


def test_a_probe_stuck_in_the_driver_makes_the_next_probes_fail_fast_not_pile_up(settings, monkeypatch):
    db = Database(settings.database_url)
    release = threading.Event()
    calls: list[int] = []

    def stuck():
        calls.append(1)
        release.wait(10)
        return db_ready

    db_ready = anyio.run(db.readiness)  # a normal probe first: ready
    monkeypatch.setattr(db, "_probe_sync", stuck)
    monkeypatch.setattr("app.db.database.READINESS_REUSE_S", 0)  # each probe after its deadline asks again

    async def three_probes():
        return [await db.readiness(deadline=0.3) for _ in range(3)]

    states = anyio.run(three_probes)
    release.set()
    assert db_ready.ready is True
    assert [s.database for s in states] == ["timeout", "timeout", "timeout"]
    assert len(calls) == 1  # one thread in the driver, not three
    db.dispose()


def test_concurrent_probes_share_one_check_and_all_get_its_answer(settings, monkeypatch):
    db = Database(settings.database_url)
    real, calls = db._probe_sync, []

    def slow_probe():
        calls.append(1)
        time.sleep(0.2)  # a probe in flight while the others arrive
        return real()

    monkeypatch.setattr(db, "_probe_sync", slow_probe)

    async def probes():
        states = []

        async def one():
            states.append(await db.readiness())

        async with anyio.create_task_group() as tg:
            for _ in range(32):
                tg.start_soon(one)
        return states

    states = anyio.run(probes)
    assert [s.ready for s in states] == [True] * 32
    assert len(calls) == 1
    db.dispose()


def test_an_answer_is_reused_for_a_moment_only_then_the_database_is_asked_again(settings, monkeypatch):
    db = Database(settings.database_url)
    real, calls = db._probe_sync, []
    monkeypatch.setattr(db, "_probe_sync", lambda: calls.append(1) or real())
    monkeypatch.setattr("app.db.database.READINESS_REUSE_S", 0.05)

    async def probes():
        first, second = await db.readiness(), await db.readiness()
        await anyio.sleep(0.1)
        return first, second, await db.readiness()

    states = anyio.run(probes)
    assert [s.ready for s in states] == [True, True, True]
    assert len(calls) == 2
    db.dispose()


def test_a_database_error_that_is_no_outage_still_answers_503_not_500(settings, tmp_path):
    not_a_database = tmp_path / "garbage.db"
    not_a_database.write_bytes(b"this is not a SQLite file" * 100)
    db = Database(f"sqlite:///{not_a_database}")
    with TestClient(create_app(settings, db=db), base_url=settings.base_url) as client:
        ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {"status": "unavailable", "database": "error", "schema": "unknown",
                            "limits": "in-process"}
