"""Cross-process exclusion for start-up work (migrations, seeding) that replicas may run at once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import text
from sqlalchemy.engine import Connection

# Arbitrary constants ("mcpapp" + a suffix): one lock per kind of start-up work.
MIGRATION_LOCK = 0x6D6370617070
SEED_LOCK = 0x6D6370617071


@contextmanager
def advisory_lock(connection: Connection, key: int) -> Iterator[None]:
    """PostgreSQL: the first replica takes the lock and works; the others wait, then find nothing
    left to do. SQLite needs nothing: its writers already serialise on the database lock."""
    if connection.dialect.name != "postgresql":
        yield
        return
    connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
    connection.commit()
    try:
        yield
    finally:
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
        connection.commit()
