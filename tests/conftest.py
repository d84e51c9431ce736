"""Shared fixtures. The test database is built by running the alembic migrations.

``APP_TEST_DATABASE_URL`` selects PostgreSQL (each run gets its own schema,
dropped afterwards); otherwise a fresh SQLite file is used.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.db import Database
from app.db.migrate import upgrade
from app.settings import Settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _postgres_schema_url(base: str, schema: str) -> str:
    url = make_url(base)
    return url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = os.environ.get("APP_TEST_DATABASE_URL")
    if not base:
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
        upgrade(url)
        yield url
        return
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = _postgres_schema_url(base, schema)
    try:
        upgrade(url)
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(scope="session")
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    yield database
    database.dispose()


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, log_format="json", _env_file=None)  # type: ignore[call-arg]


ROOT = Path(__file__).resolve().parents[1]
