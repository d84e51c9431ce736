"""One linear migration history that builds the schema the models describe; seeding is separate and idempotent.

Feature-specific migration behaviour lives with each feature's tests (test_search, test_cafes, test_zoo);
these hold for any set of features, a fork's included.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from app.db import Base, Database
from app.db.migrate import (
    LEGACY_EQUIVALENT,
    LEGACY_HEADS,
    downgrade,
    head_revisions,
    include_name,
    include_object,
    migrations_dir,
    upgrade,
)
from app.main import discover_features
from app.parts import seed
from app.settings import load_settings
from tests.conftest import ROOT
from tests.demos import authserver_installed


def _versions(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        versions = list(conn.scalars(text("SELECT version_num FROM alembic_version")))
    engine.dispose()
    return versions


def test_the_history_is_one_line_of_revisions_that_never_import_application_code():
    script = ScriptDirectory(str(migrations_dir()))
    revisions = list(script.walk_revisions())
    assert len(script.get_heads()) == 1 and len(script.get_bases()) == 1
    assert all(not rev.is_branch_point and not rev.is_merge_point for rev in revisions)
    for rev in revisions:
        tree = ast.parse(open(rev.path, encoding="utf-8").read())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m == "app" or m.startswith("app.")], rev.path


def test_migrations_build_the_schema_the_models_describe(fresh_database):
    upgrade(fresh_database)
    discover_features()
    engine = create_engine(fresh_database)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": include_name,
                                                         "include_object": include_object, "compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_upgrade_downgrade_upgrade_round_trips_and_seeding_loads_every_feature(fresh_database):
    features = discover_features()
    upgrade(fresh_database)
    upgrade(fresh_database)  # already at head: nothing to do
    engine = create_engine(fresh_database)
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    downgrade(fresh_database, "base")
    assert set(inspect(engine).get_table_names()) - {"alembic_version"} == set()
    engine.dispose()
    upgrade(fresh_database)
    db = Database(fresh_database)
    try:
        lines = seed(db, features, load_settings(database_url=fresh_database))
    finally:
        db.dispose()
    accounts = ["accounts"] if authserver_installed() else []  # the demo accounts come first
    assert [line.split(":")[0] for line in lines] == [*accounts, *(f.name for f in features if f.seed is not None)]
    assert _versions(fresh_database) == sorted(head_revisions())


def _stamp_legacy(url: str) -> None:
    """A database as 0.1.0 left it: its schema, stamped with the per-feature branch heads."""
    upgrade(url, LEGACY_EQUIVALENT)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM alembic_version"))
        for rev in sorted(LEGACY_HEADS):
            conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:r)"), {"r": rev})
    engine.dispose()


def test_a_database_from_the_per_feature_branch_era_is_restamped_and_upgraded(fresh_database):
    _stamp_legacy(fresh_database)
    upgrade(fresh_database)
    assert _versions(fresh_database) == sorted(head_revisions())


def test_replicas_migrating_at_once_on_postgres_do_not_collide(fresh_database):
    if not os.environ.get("APP_TEST_DATABASE_URL"):
        pytest.skip("the migration lock is a PostgreSQL advisory lock; SQLite runs one process")
    _stamp_legacy(fresh_database)  # the restamp, too, must happen once
    # Separate processes, as replicas are: alembic's context is process-global.
    env = {**os.environ, "APP_DATABASE_URL": fresh_database}
    procs = [subprocess.Popen([sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(3)]
    outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    assert _versions(fresh_database) == sorted(head_revisions())

