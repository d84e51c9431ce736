"""Alembic, driven from code: one linear history in the top-level ``migrations/`` folder.

The folder ships inside the wheel as the ``app.migrations`` package (see setup.py),
so an installed server migrates without a source checkout.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.operations import ops
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

import app

# Databases migrated before the history was made linear (commit 29c6990) carry one alembic branch per
# feature. Their schema is exactly what 0003_cafes builds, so they are restamped onto the linear history
# before upgrading.
LEGACY_HEADS = frozenset({"search_0001", "zoo_0001", "cafes_0001"})
LEGACY_EQUIVALENT = "0003_cafes"

# Full-text machinery is backend-specific DDL written by hand in migrations, never diffed:
# an FTS5 table "<table>_fts" (and the shadow tables SQLite makes for it) on SQLite, tsvector
# columns and the indexes over them on PostgreSQL.
_FTS5 = re.compile(r".+_fts(_(data|idx|content|docsize|config))?")


class MigrationError(RuntimeError):
    pass


def migrations_dir() -> Path:
    installed = Path(str(files("app.migrations")))
    # In a source checkout the package must be installed from THIS checkout: an environment
    # installed from another copy would read (and `revision` would write) that copy's history.
    checkout = Path(app.__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "migrations" / "env.py").is_file():
        if installed.resolve() != (checkout / "migrations").resolve():
            raise MigrationError(f"this environment's app.migrations is {installed}, not {checkout / 'migrations'}: "
                                 f"install this checkout (./dev does: pip install -e .)")
    return installed


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    # Revision ids are "NNNN_slug" (see new_revision), so the id alone names the file.
    cfg.set_main_option("file_template", "%%(rev)s")
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


@lru_cache(maxsize=1)
def _script() -> ScriptDirectory:
    return ScriptDirectory(str(migrations_dir()))


def head_revisions() -> frozenset[str]:
    return frozenset(_script().get_heads())


def current_revisions(connection: Connection) -> frozenset[str] | None:
    """The revisions stamped in the database; None when it was never migrated."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return frozenset(connection.scalars(text("SELECT version_num FROM alembic_version")))


def schema_status(current: frozenset[str] | None) -> str:
    """``ok``, ``ahead`` (migrated by newer code: still usable), ``behind`` or ``not migrated``."""
    if not current:
        return "not migrated"
    heads = head_revisions()
    if current == heads:
        return "ok"
    if current <= LEGACY_HEADS:
        return "behind"
    known = {rev.revision for rev in _script().walk_revisions()}
    return "ahead" if current - known else "behind"


def upgrade(database_url: str, revision: str = "heads") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)


def new_revision(database_url: str, message: str, *, autogenerate: bool = True) -> Path:
    """Write the next migration file (``NNNN_slug.py``), by default diffed from the models."""
    slug = re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")[:40] or "change"
    numbers = [int(m.group(1)) for rev in _script().walk_revisions() if (m := re.match(r"(\d{4})_", rev.revision))]
    rev_id = f"{max(numbers, default=0) + 1:04d}_{slug}"
    script = command.revision(alembic_config(database_url), message=message, autogenerate=autogenerate,
                              rev_id=rev_id)
    _script.cache_clear()
    if script is None or isinstance(script, list):
        raise MigrationError("alembic wrote no single revision")
    return Path(script.path)


def restamp_legacy(connection: Connection) -> None:
    """Move a database of the per-feature branches onto the linear history; call under the migration lock."""
    current = current_revisions(connection)
    if current and current <= LEGACY_HEADS:
        if current != LEGACY_HEADS:
            raise MigrationError(f"the database is stamped {sorted(current)}, part of the per-feature history of "
                                 f"before commit 29c6990: migrate it with that history first (all three "
                                 f"branches), or start from an empty database")
        connection.execute(text("DELETE FROM alembic_version"))
        connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:rev)"),
                           {"rev": LEGACY_EQUIVALENT})
    # End the transaction the check began: alembic must open its own, or it would not commit.
    connection.commit()


def check_foreign_keys(connection: Connection) -> None:
    """SQLite migrates with foreign keys off; refuse to finish if that left dangling references."""
    if connection.dialect.name != "sqlite":
        return
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise MigrationError(f"the migration left rows whose foreign keys point nowhere: {broken[:5]}")


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Autogenerate hook: never diff SQLite full-text tables (see ``_FTS5``)."""
    return not (type_ == "table" and _FTS5.fullmatch(name or ""))


def include_object(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Autogenerate hook: never diff PostgreSQL tsvector columns or their indexes a model does not declare."""
    if not reflected or compare_to is not None:
        return True
    if type_ == "column":
        return not _is_tsvector(obj.type)
    if type_ == "index":
        return not any(_is_tsvector(column.type) for column in obj.columns)
    return True


def revision_directives(context: MigrationContext, revision: Any, directives: list[Any]) -> None:
    """``process_revision_directives`` hook: what autogenerate writes, made to run on either backend."""
    add_full_text_drops(context, revision, directives)
    portable_downgrades(directives)
    order_by_foreign_keys(context, directives)


def order_by_foreign_keys(context: MigrationContext, directives: list[Any]) -> None:
    """Tables dropped together go referencing ones first (and come back referenced ones first).

    Autogenerate lists removed tables in no dependable order, and SQLite, where a forker generates the
    migration, drops a table others point at without a word; PostgreSQL refuses. Each table's operations
    (its index drops, its full-text drop) move as one block, the rest keeps its place.
    """
    if not directives or context.connection is None:
        return
    inspector = inspect(context.connection)
    refers = {t: {fk["referred_table"] for fk in inspector.get_foreign_keys(t)} - {t}
              for t in inspector.get_table_names()}
    for container in directives[0].upgrade_ops_list:
        container.ops = _ordered(container.ops, refers, referencing_first=True)
    for container in directives[0].downgrade_ops_list:
        container.ops = _ordered(container.ops, refers, referencing_first=False)


def _ordered(operations: list[Any], refers: dict[str, set[str]], referencing_first: bool) -> list[Any]:
    blocks: dict[str, list[Any]] = {}  # each table's operations, in the order first seen
    pending: list[Any] = []  # an operation without a table (the full-text drop) goes with the next table's
    for op in operations:
        pending.append(op)
        table = getattr(op, "table_name", None)
        if table is not None:
            blocks.setdefault(table, []).extend(pending)
            pending = []

    def waits_for(table: str) -> set[str]:
        if referencing_first:  # drop T once every table that points at T is gone
            return {other for other in blocks if table in refers.get(other, set())}
        return refers.get(table, set()) & set(blocks)  # create T once what it points at exists

    done: set[str] = set()
    ordered: list[Any] = []
    left = list(blocks)
    while left:
        table = next((t for t in left if waits_for(t) - {t} <= done), left[0])  # a cycle: as listed
        left.remove(table)
        done.add(table)
        ordered.extend(blocks[table])
    return ordered + pending


def portable_downgrades(directives: list[Any]) -> None:
    """A dropped table's downgrade recreates it from the columns reflected on the generating database; SQLite
    reflects ``DATETIME``, which PostgreSQL has no type for. Written as SQLAlchemy's generic types
    (``sa.DateTime()``, ``sa.String(255)``), the downgrade runs on both backends."""
    for downgrade_ops in directives[0].downgrade_ops_list if directives else ():
        for op in downgrade_ops.ops:
            for column in getattr(op, "columns", ()):
                if hasattr(column, "type"):
                    try:
                        column.type = column.type.as_generic()
                    except NotImplementedError:  # a backend-only type (tsvector): kept as reflected
                        pass


def add_full_text_drops(context: MigrationContext, revision: Any, directives: list[Any]) -> None:
    """``process_revision_directives`` hook: a dropped table takes its full-text index along, on every backend.

    The index is invisible to autogenerate (above), so the drop is added here, written to
    run on SQLite and PostgreSQL alike whichever backend the migration was generated on.
    """
    if not directives or context.connection is None:
        return
    inspector = inspect(context.connection)
    tables = set(inspector.get_table_names())
    for upgrade_ops in directives[0].upgrade_ops_list:
        rewritten: list[Any] = []
        for op in upgrade_ops.ops:
            if isinstance(op, ops.DropTableOp) and _has_full_text(inspector, tables, op.table_name):
                rewritten.append(ops.ExecuteSQLOp(f"DROP TABLE IF EXISTS {op.table_name}_fts"))
            rewritten.append(op)
        upgrade_ops.ops = rewritten


def _has_full_text(inspector: Any, tables: Iterable[str], table: str) -> bool:
    return f"{table}_fts" in tables or any(_is_tsvector(c["type"]) for c in inspector.get_columns(table))


def _is_tsvector(column_type: Any) -> bool:
    return type(column_type).__name__ == "TSVECTOR"


