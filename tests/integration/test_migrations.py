"""Migrations build the schema from nothing, seed it, and unwind cleanly."""

from __future__ import annotations

import os
import uuid

from sqlalchemy import create_engine, inspect, text

from app.db.migrate import downgrade, upgrade
from tests.conftest import _postgres_schema_url


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
