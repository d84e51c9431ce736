"""Idempotent writes: bulk upserts for seed data (update only the rows that changed), and a single
insert that is atomic under concurrency (``ON CONFLICT DO NOTHING``) on SQLite and PostgreSQL; and
the count of rows an UPDATE or DELETE matched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import CursorResult, FromClause, Result, Table, or_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

_INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


def _insert(session: Session, table: FromClause) -> Any:
    # A model's __table__ is typed FromClause (a model may map a join); ours each map a Table.
    if not isinstance(table, Table):
        raise TypeError(f"idempotent writes go to a table, not {table!r}")
    dialect = session.get_bind().dialect.name
    if dialect not in _INSERTS:
        raise NotImplementedError(f"idempotent writes are written for SQLite and PostgreSQL, not {dialect}")
    return _INSERTS[dialect](table)


def insert_if_absent(session: Session, table: FromClause, values: Mapping[str, Any],
                     key: Sequence[str]) -> bool:
    """Insert the row unless its ``key`` exists; True if this call inserted it. A concurrent insert of the
    same key is never an IntegrityError."""
    stmt = (_insert(session, table).values(**values).on_conflict_do_nothing(index_elements=list(key))
            # RETURNING, not rowcount: psycopg reports -1 for this INSERT.
            .returning(*(table.c[k] for k in key)))
    return session.execute(stmt).first() is not None


def upsert(session: Session, table: FromClause, rows: Sequence[Mapping[str, Any]],
           key: Sequence[str] = ("id",), *, only_changed: bool = True) -> None:
    """Insert ``rows``, or update those whose ``key`` exists. ``only_changed``: leave a row whose
    values are all the same untouched; off for a row that changes on every write anyway (a time
    stamp) or holds a column PostgreSQL cannot compare (``json`` has no ``=``)."""
    if not rows:
        return
    stmt = _insert(session, table)
    values = [c for c in rows[0] if c not in key]
    if values:
        # The WHERE keeps unchanged rows untouched: no rewrite, no trigger, no index churn.
        changed = or_(*(table.c[c].is_distinct_from(stmt.excluded[c]) for c in values))
        stmt = stmt.on_conflict_do_update(
            index_elements=list(key),
            set_={c: stmt.excluded[c] for c in values},
            where=changed if only_changed else None,
        )
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=list(key))
    session.execute(stmt, [dict(r) for r in rows])


def rowcount(result: Result[Any]) -> int:
    """The rows the UPDATE or DELETE that gave ``result`` matched."""
    # Session.execute is typed to return a Result, which has no rowcount; for a DML statement it is
    # a CursorResult, which has.
    return cast(CursorResult[Any], result).rowcount
