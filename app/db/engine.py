"""Engines configured per backend: SQLite for development, PostgreSQL in production.

Both get driver-level deadlines, because a thread blocked in the driver cannot be
cancelled from the event loop: the driver itself must give up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.pool import NullPool

# How long a SQLite writer waits for the lock before giving up (SQLITE_BUSY).
SQLITE_BUSY_TIMEOUT_S = 15.0
# Execution option that makes a SQLite transaction take the write lock when it begins.
WRITE = "app_write"


def make_engine(
    url: str,
    *,
    pool_size: int = 10,
    connect_timeout: float | None = None,
    statement_timeout: float | None = None,
    pooled: bool = True,
    foreign_keys: bool = True,
) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, pooled, pool_size, foreign_keys)
    connect_args: dict[str, Any] = {}
    if connect_timeout is not None and "connect_timeout" not in parsed.query:
        # libpq counts whole seconds and treats anything below 2 as 2.
        connect_args["connect_timeout"] = max(2, round(connect_timeout))
    if statement_timeout is not None:
        # Server-side deadline for every statement; appended so URL options (search_path) survive.
        existing = parsed.query.get("options", "")
        existing = existing if isinstance(existing, str) else " ".join(existing)
        connect_args["options"] = f"{existing} -c statement_timeout={int(statement_timeout * 1000)}".strip()
    if not pooled:
        return create_engine(url, poolclass=NullPool, connect_args=connect_args, hide_parameters=True)
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True, pool_recycle=1800,
                         hide_parameters=True,  # errors and logs never carry user input or digests
                         connect_args=connect_args)


def _sqlite_engine(url: str, pooled: bool, pool_size: int, foreign_keys: bool) -> Engine:
    parsed = make_url(url)
    kwargs: dict[str, Any] = {"connect_args": {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S}}
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        if pooled:  # as many connections as the database threads may ask for (see Database)
            kwargs |= {"pool_size": pool_size, "max_overflow": pool_size}
    if not pooled:
        kwargs["poolclass"] = NullPool
    engine = create_engine(url, **kwargs)

    @event.listens_for(engine, "connect")
    def _configure(dbapi_conn: Any, _record: object) -> None:  # dbapi_conn: pysqlite's own
        # pysqlite's own transaction handling begins late and always DEFERRED; take it over so
        # writers can BEGIN IMMEDIATE (below) and DDL stays transactional.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        # WAL: readers never block the writer, and several workers can share the file.
        cur.execute("PRAGMA journal_mode=WAL")
        # Off only for migrations: a batch ALTER copies a table and drops the original, and with
        # foreign keys on, that drop would cascade-delete every referencing row.
        cur.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        # A deferred transaction that reads and then writes fails with SQLITE_BUSY_SNAPSHOT
        # when another writer got in between; the busy timeout cannot help it. A writer that
        # takes the lock up front waits its turn instead.
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN")

    return engine
