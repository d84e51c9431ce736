"""Which database failures are outages, which mean "not migrated", and which are bugs.

Only failures to reach or hold a connection are outages ("retry shortly"). Everything
else, a bad query included, is a bug and must surface as one, not be hidden as an
outage. The driver exception types overlap (SQLite reports a missing table and a
locked file with the same class), so the cause is read from the error codes.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout


class DatabaseUnavailable(RuntimeError):
    """The database could not be reached in time; the request may be retried."""


class DatabaseNotMigrated(RuntimeError):
    """The schema is behind the code: an operator must run the migrations."""


# PostgreSQL SQLSTATEs that mean the server is unreachable, going away, overloaded or too slow.
_PG_UNAVAILABLE_CLASSES = ("08",)  # connection exception
_PG_UNAVAILABLE_CODES = frozenset({
    "57P01",  # admin_shutdown
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now (starting up, recovering)
    "57014",  # query_canceled: our statement_timeout fired
    "53300",  # too_many_connections
})
_PG_UNDEFINED_OBJECT = frozenset({"42P01", "42703"})  # undefined_table, undefined_column
_SQLITE_UNAVAILABLE = ("SQLITE_CANTOPEN", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR")
NOT_MIGRATED_MESSAGE = ("The server's database schema is not up to date; an operator must run "
                        "`python -m app migrate`.")


def is_outage(exc: BaseException) -> bool:
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if _is_psycopg(orig):
        if sqlstate is None:
            # No server answer at all (refused, DNS, timeout while connecting): psycopg's
            # OperationalError without a SQLSTATE. A server-reported error always has one.
            return any(cls.__name__ == "OperationalError" for cls in type(orig).__mro__)
        return sqlstate.startswith(_PG_UNAVAILABLE_CLASSES) or sqlstate in _PG_UNAVAILABLE_CODES
    name = getattr(orig, "sqlite_errorname", None)
    return isinstance(name, str) and name.startswith(_SQLITE_UNAVAILABLE)


def is_undefined_object(exc: BaseException) -> bool:
    """A missing table or column: the schema may be behind the code (or the query is wrong)."""
    if not isinstance(exc, DBAPIError):
        return False
    orig = exc.orig
    if _is_psycopg(orig):
        return getattr(orig, "sqlstate", None) in _PG_UNDEFINED_OBJECT
    return str(orig).startswith(("no such table", "no such column"))


def _is_psycopg(orig: object) -> bool:
    return type(orig).__module__.startswith("psycopg")
