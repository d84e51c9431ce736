"""Idempotent bulk writes for seed data: insert new rows, update only the rows that changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Table, or_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def upsert(session: Session, table: Table, rows: Sequence[Mapping[str, Any]], key: Sequence[str] = ("id",)) -> None:
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    if dialect not in _INSERTS:
        raise NotImplementedError(f"upsert is written for SQLite and PostgreSQL, not {dialect}")
    stmt = _INSERTS[dialect](table)
    values = [c for c in rows[0] if c not in key]
    if values:
        # The WHERE keeps unchanged rows untouched: no rewrite, no trigger, no index churn.
        stmt = stmt.on_conflict_do_update(
            index_elements=list(key),
            set_={c: stmt.excluded[c] for c in values},
            where=or_(*(table.c[c].is_distinct_from(stmt.excluded[c]) for c in values)),
        )
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=list(key))
    session.execute(stmt, [dict(r) for r in rows])
