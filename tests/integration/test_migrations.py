"""Migrations build the schema from nothing, seed it, and unwind cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from sqlalchemy import create_engine, inspect, text

from app.db.migrate import downgrade, upgrade
from tests.conftest import ROOT, _postgres_schema_url


def _fresh_url(tmp_path) -> tuple[str, callable]:
    base = os.environ.get("APP_TEST_DATABASE_URL")
    if not base:
        return f"sqlite:///{tmp_path / 'm.db'}", lambda: None
    schema = f"m_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))

    def drop():
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return _postgres_schema_url(base, schema), drop


def test_upgrade_seeds_every_feature_and_downgrade_removes_it_all(tmp_path):
    url, drop = _fresh_url(tmp_path)
    try:
        upgrade(url)
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM zoo_animals")).scalar_one() == 30
            assert conn.execute(text("SELECT count(*) FROM cafes")).scalar_one() >= 30
            assert conn.execute(text("SELECT count(*) FROM search_documents")).scalar_one() >= 1000
        upgrade(url)  # idempotent: already at heads
        downgrade(url, "base")
        tables = set(inspect(engine).get_table_names()) - {"alembic_version"}
        assert tables == set()
        upgrade(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM zoo_animals")).scalar_one() == 30
        engine.dispose()
    finally:
        drop()


def test_replicas_migrating_at_once_on_postgres_do_not_collide(tmp_path):
    if not os.environ.get("APP_TEST_DATABASE_URL"):
        pytest.skip("the migration lock is a PostgreSQL advisory lock; SQLite runs one process")
    url, drop = _fresh_url(tmp_path)
    try:
        # Separate processes, as replicas are: alembic's context is process-global.
        env = {**os.environ, "APP_DATABASE_URL": url}
        procs = [subprocess.Popen([sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(3)]
        outputs = [p.communicate(timeout=120)[0].decode() for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], outputs
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM zoo_animals")).scalar_one() == 30
        engine.dispose()
    finally:
        drop()
