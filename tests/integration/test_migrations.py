"""One linear migration history that builds the schema the models describe; seeding is separate and idempotent."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from app.db import Base, Database
from app.db.migrate import LEGACY_HEADS, downgrade, migrations_dir, unmanaged_filter, upgrade
from app.features.zoo import service as zoo
from app.features.zoo.repository import AnimalRepository
from app.main import discover_features, seed
from tests.conftest import ROOT, empty_database


@pytest.fixture
def fresh(tmp_path):
    url, drop = empty_database(tmp_path, "m")
    yield url
    drop()


def _count(url: str, table: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        value = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
    engine.dispose()
    return value


def test_the_history_is_one_line_of_revisions_that_never_import_application_code():
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(migrations_dir()))
    revisions = list(script.walk_revisions())
    assert len(script.get_heads()) == 1 and len(script.get_bases()) == 1
    assert all(not rev.is_branch_point and not rev.is_merge_point for rev in revisions)
    for rev in revisions:
        tree = ast.parse(open(rev.path, encoding="utf-8").read())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m == "app" or m.startswith("app.")], rev.path


def test_migrations_build_the_schema_the_models_describe(fresh):
    upgrade(fresh)
    discover_features()
    engine = create_engine(fresh)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": unmanaged_filter(Base.metadata),
                                                         "compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_upgrade_downgrade_upgrade_round_trips_and_seeding_fills_every_feature(fresh):
    upgrade(fresh)
    assert _count(fresh, "zoo_animals") == 0  # schema only: data comes from the seed step
    upgrade(fresh)  # already at head: nothing to do
    downgrade(fresh, "base")
    engine = create_engine(fresh)
    assert set(inspect(engine).get_table_names()) - {"alembic_version"} == set()
    engine.dispose()
    upgrade(fresh)
    db = Database(fresh)
    try:
        assert seed(db, discover_features()) == ["cafes: 13 cities, 43 cafés", "search: 5116 documents",
                                                  "zoo: 30 animals"]
    finally:
        db.dispose()
    assert (_count(fresh, "zoo_animals"), _count(fresh, "cafes"), _count(fresh, "cafe_city_names")) == (30, 43, 52)


def test_seeding_again_changes_nothing_and_keeps_what_users_did(fresh):
    upgrade(fresh)
    db = Database(fresh)
    features = discover_features()
    try:
        seed(db, features)
        db.write_sync(lambda uow: zoo.like(uow, "king-penguin-admiral"))
        db.write_sync(lambda uow: uow.repository(AnimalRepository).get("king-penguin-admiral").__setattr__(
            "species", "Edited species"))
        seed(db, features)
        animal = db.read_sync(lambda uow: zoo.animal_details(uow, "king-penguin-admiral"))
    finally:
        db.dispose()
    assert animal.likes == 1  # a user's like survives a re-seed
    assert animal.species == "King penguin"  # seed data is restored to what the data file says
    assert _count(fresh, "zoo_animals") == 30 and _count(fresh, "search_documents") == 5116


def test_a_database_from_the_per_feature_branch_era_is_restamped_and_upgraded(fresh):
    upgrade(fresh, "0003_cafes")
    engine = create_engine(fresh)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM alembic_version"))
        for rev in sorted(LEGACY_HEADS):
            conn.execute(text("INSERT INTO alembic_version (version_num) VALUES (:r)"), {"r": rev})
    upgrade(fresh)
    with engine.connect() as conn:
        assert list(conn.scalars(text("SELECT version_num FROM alembic_version"))) == ["0006_cafe_city_names"]
        assert "likes" in {c["name"] for c in inspect(conn).get_columns("zoo_animals")}
    engine.dispose()


def test_replicas_migrating_at_once_on_postgres_do_not_collide(fresh):
    if not os.environ.get("APP_TEST_DATABASE_URL"):
        pytest.skip("the migration lock is a PostgreSQL advisory lock; SQLite runs one process")
    # Separate processes, as replicas are: alembic's context is process-global.
    env = {**os.environ, "APP_DATABASE_URL": fresh}
    procs = [subprocess.Popen([sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(3)]
    outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    engine = create_engine(fresh)
    with engine.connect() as conn:
        assert list(conn.scalars(text("SELECT version_num FROM alembic_version"))) == ["0006_cafe_city_names"]
    engine.dispose()
