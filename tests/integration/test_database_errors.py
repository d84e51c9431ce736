"""Failure classification on real driver errors: outages are outages, bugs are bugs.

SQLite raises ``OperationalError`` both for a locked file and for a missing table;
only the first may be reported as "unavailable, retry".
"""

from __future__ import annotations

import os
import sqlite3
from typing import Annotated

import pytest
from mcp.types import CallToolResult
from pydantic import BaseModel
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError
from starlette.testclient import TestClient

from app.auth.schemes import NOAUTH
from app.db import DatabaseUnavailable
from app.db.errors import is_outage, is_undefined_object
from app.feature import Deps, Feature
from app.main import create_app

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
POSTGRES = bool(os.environ.get("APP_TEST_DATABASE_URL"))


def _raised(url: str, sql: str, **connect_args) -> DBAPIError:
    engine = create_engine(url, connect_args=connect_args)
    try:
        with engine.connect() as conn:
            conn.execute(text(sql))
    except DBAPIError as exc:
        return exc
    finally:
        engine.dispose()
    raise AssertionError(f"{sql!r} did not fail")


@pytest.mark.parametrize(("sql", "undefined"), [("SELECT * FROM no_such_table", True),
                                                ("SELECT no_such_column FROM alembic_version", True),
                                                ("SELEC 1", False)])
def test_query_errors_on_the_configured_backend_are_not_outages(database_url, sql, undefined):
    exc = _raised(database_url, sql)
    assert not is_outage(exc)
    assert is_undefined_object(exc) is undefined


def test_a_sqlite_file_that_cannot_be_opened_is_an_outage(tmp_path):
    assert is_outage(_raised(f"sqlite:///{tmp_path}", "SELECT 1"))  # a directory is not a database file


def test_a_sqlite_file_locked_beyond_the_busy_timeout_is_an_outage(tmp_path):
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        exc = _raised(f"sqlite:///{path}", "INSERT INTO t VALUES (1)", timeout=0.05)
    finally:
        holder.close()
    assert getattr(exc.orig, "sqlite_errorname", "") == "SQLITE_BUSY"
    assert is_outage(exc)


def test_a_refused_postgres_connection_is_an_outage():
    assert is_outage(_raised("postgresql+psycopg://nobody@127.0.0.1:1/none", "SELECT 1"))


@pytest.mark.skipif(not POSTGRES, reason="a statement timeout is PostgreSQL's")
def test_a_postgres_statement_timeout_is_an_outage(database_url):
    assert is_outage(_raised(database_url, "SELECT pg_sleep(2)", options="-c statement_timeout=50"))


def test_the_unit_of_work_reports_outages_as_unavailable(tmp_path):
    from app.db import Database

    db = Database(f"sqlite:///{tmp_path}")
    with pytest.raises(DatabaseUnavailable):
        db.read_sync(lambda uow: uow.repository(_Raw).one())
    db.dispose()


class _Raw:
    def __init__(self, session) -> None:
        self.session = session

    def one(self) -> int:
        return self.session.execute(text("SELECT 1")).scalar_one()

    def broken(self) -> int:
        return self.session.execute(text("SELEC 1")).scalar_one()


class Out(BaseModel):
    n: int


def _buggy(registry, deps: Deps) -> None:
    @registry.tool(name="buggy", title="Buggy", description="runs a malformed query", read_only=True,
                   destructive=False, open_world=False, security=[NOAUTH])
    async def buggy() -> Annotated[CallToolResult, Out]:
        await deps.db.read(lambda uow: uow.repository(_Raw).broken())
        raise AssertionError("unreachable")


def test_a_query_bug_is_a_generic_tool_error_with_the_traceback_logged_under_the_request_id(settings, json_log):
    app = create_app(settings, features=[Feature(name="buggy", tools=_buggy)])
    with TestClient(app, base_url=settings.base_url) as client:
        resp = client.post("/mcp", headers={**HEADERS, "x-request-id": "bug-42"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "buggy", "arguments": {}}})
    result = resp.json()["result"]
    assert resp.status_code == 200 and result["isError"] is True
    # No SQL, no driver text: that the tool failed, for the person; what to do, for the model.
    assert [c["text"] for c in result["content"]] == [
        "Buggy failed on the server before it finished; the failure is logged for the operator.",
        "Tell the user it did not work. Trying again with the same arguments is unlikely to help."]
    crash = next(e for e in json_log() if "unexpected exception" in e["event"])
    assert crash["request_id"] == "bug-42" and crash["level"] == "error"
    assert "SELEC 1" in crash["exception"] and "Traceback" in crash["exception"]
