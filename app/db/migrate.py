"""Alembic, driven from code: one linear history in the top-level ``migrations/`` folder.

The folder ships inside the wheel as the ``app.migrations`` package (see setup.py),
so an installed server migrates without a source checkout.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData, inspect, text
from sqlalchemy.engine import Connection

from app.db.engine import make_engine

# Databases created by 0.1.0 carry one alembic branch per feature. Their schema is exactly
# what 0003_cafes builds, so they are restamped onto the linear history before upgrading.
LEGACY_HEADS = frozenset({"search_0001", "zoo_0001", "cafes_0001"})
LEGACY_EQUIVALENT = "0003_cafes"
# The tables SQLite creates for an FTS5 virtual table named "<table>_fts".
_FTS5_SHADOW = re.compile(r".+_fts_(data|idx|content|docsize|config)")


class MigrationError(RuntimeError):
    pass


def migrations_dir() -> Path:
    return Path(str(files("app.migrations")))


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


def unmanaged_filter(metadata: MetaData) -> Callable[[str | None, str, Any], bool]:
    """An alembic ``include_name`` hook that hides what the models deliberately leave undeclared.

    Backend-specific objects (full-text indexes) are created in SQL by a migration; the
    owning table lists them in ``info["unmanaged"]``: companion tables by name, its own
    columns and indexes as ``"table.name"``. When the owning feature is deleted its list
    goes too, so autogenerate drops them with its tables.
    """
    unmanaged = frozenset(name for table in metadata.tables.values() for name in table.info.get("unmanaged", ()))

    def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
        if type_ == "table":
            # SQLite FTS5 shadow tables belong to their virtual table: dropping that drops them.
            return name not in unmanaged and not _FTS5_SHADOW.fullmatch(name or "")
        return f"{(parent_names or {}).get('table_name')}.{name}" not in unmanaged

    return include_name


def upgrade(database_url: str, revision: str = "heads") -> None:
    _restamp_legacy(database_url)
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


def _restamp_legacy(database_url: str) -> None:
    engine = make_engine(database_url, pooled=False)
    try:
        with engine.begin() as conn:
            current = current_revisions(conn)
            if not current or not current <= LEGACY_HEADS:
                return
            if current != LEGACY_HEADS:
                raise MigrationError(f"the database is stamped {sorted(current)}, part of the pre-0.2 per-feature "
                                     f"history; migrate it with 0.1.0 first, or start from an empty database")
            conn.execute(text("DELETE FROM alembic_version"))
            conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:rev)"), {"rev": LEGACY_EQUIVALENT})
    finally:
        engine.dispose()
