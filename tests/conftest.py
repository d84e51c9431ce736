"""Shared fixtures. The test database is built by running the migrations, then the seed step.

``APP_TEST_DATABASE_URL`` selects PostgreSQL (each run gets its own schema,
dropped afterwards); otherwise a fresh SQLite file is used.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.db import Database
from app.db.migrate import upgrade
from app.logging import configure_logging
from app.main import discover_features
from app.parts import seed
from app.settings import Settings, load_settings
from tests.demos import feature_names, tree_auth_env

ROOT = Path(__file__).resolve().parents[1]
FEATURE_NAMES = feature_names(ROOT)  # what pytest.mark.demo may name


def pytest_configure(config: pytest.Config) -> None:
    # As the app does before anything logs: a logger first used unconfigured would keep structlog's defaults.
    configure_logging("console", "info", sync=True)
    for name, value in tree_auth_env().items():  # a fork without app/authserver: an external IdP's settings
        os.environ.setdefault(name, value)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(ModuleScheduling(), "module-scheduling")


# The fixtures that hand a test a database of the configured kind (tests/conftest.py's empty_database):
# a test that uses one, directly or through another fixture, is marked ``database`` and so runs in both of
# CI's legs. A test that calls empty_database itself says @pytest.mark.database
# (tests/unit/test_database_marks.py holds every fixture and test to this).
DATABASE_FIXTURES = frozenset({"database_url", "fresh_database", "deployed", "existing_database", "unmigrated_url",
                               "listing_database"})


# ./dev test spreads the suite over processes (pytest-xdist). A module's tests stay on one process, so what
# its module-scoped fixtures start (servers, browsers) starts once; the modules whose tests each start what
# they need, and take long, are spread test by test.
SPREAD = ("tests/e2e/test_fork.py", "tests/e2e/test_limits.py", "tests/e2e/test_observability.py")


class ModuleScheduling:
    """Registered when pytest-xdist is loaded (its hook is unknown to pytest without it: -p no:xdist)."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
        from xdist.scheduler import LoadFileScheduling

        class ByModule(LoadFileScheduling):
            def _split_scope(self, nodeid: str) -> str:
                module = nodeid.split("::", 1)[0]
                return nodeid if module in SPREAD else module

        return ByModule(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.database)
        for mark in item.iter_markers("demo"):
            unknown = [name for name in mark.args if name not in FEATURE_NAMES]
            if not mark.args or unknown:
                raise pytest.UsageError(f"{item.nodeid}: pytest.mark.demo needs names of features (app/features) "
                                        f"from {FEATURE_NAMES}, got {mark.args!r}")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _postgres_schema_url(base: str, schema: str) -> str:
    url = make_url(base)
    return url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)


def empty_database(tmp_path: Path, name: str = "t") -> tuple[str, Callable[[], None]]:
    """A new empty database (SQLite file, or a private PostgreSQL schema) and its cleanup."""
    base = os.environ.get("APP_TEST_DATABASE_URL")
    if not base:
        return f"sqlite:///{tmp_path / f'{name}.db'}", lambda: None
    schema = f"{name}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return _postgres_schema_url(base, schema), drop


def prepare(url: str) -> None:
    """What `serve` does before it starts: migrate to head, then seed."""
    upgrade(url)
    db = Database(url)
    try:
        seed(db, discover_features(), load_settings(database_url=url))
    finally:
        db.dispose()


@pytest.fixture
def fresh_database(tmp_path: Path) -> Iterator[str]:
    """An empty database of the configured kind, for tests that migrate it themselves."""
    url, drop = empty_database(tmp_path, "fresh")
    yield url
    drop()


def count_rows(url: str, table: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url, drop = empty_database(tmp_path_factory.mktemp("db"))
    try:
        prepare(url)
        yield url
    finally:
        drop()


@pytest.fixture(scope="session")
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    yield database
    database.dispose()


@pytest.fixture
def json_log() -> Iterator[Callable[[], list[dict]]]:
    """Capture what the app logs, rendered as the production JSON lines; call it to read them."""
    stream = io.StringIO()
    writer = configure_logging("json", "info", stream=stream, sync=True)

    def lines() -> list[dict]:
        writer.flush()
        return [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]

    try:
        yield lines
    finally:
        configure_logging("console", "info", sync=True)
    for name, value in tree_auth_env().items():  # a fork without app/authserver: an external IdP's settings
        os.environ.setdefault(name, value)


REDIS_URL = os.environ.get("APP_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The Redis the fleet tests share limits through (CI: 127.0.0.1:6379, shared with other runs: every test
    keys under a prefix of its own, see ``redis_prefix``). Skipped without one, unless APP_REQUIRE_REDIS=1."""
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=2, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        if os.environ.get("APP_REQUIRE_REDIS") == "1":
            pytest.fail(f"APP_REQUIRE_REDIS=1 but no Redis answers at {REDIS_URL}: {exc}")
        pytest.skip(f"no Redis at {REDIS_URL} (set APP_TEST_REDIS_URL)")
    return REDIS_URL


@contextlib.contextmanager
def redis_keys(redis_url: str) -> Iterator[str]:
    """A key prefix of its own for the block; its keys are deleted afterwards."""
    import redis

    prefix = f"test-{uuid.uuid4().hex[:12]}"
    yield prefix
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(f"{prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


@pytest.fixture
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test's own; its keys are deleted afterwards."""
    with redis_keys(redis_url) as prefix:
        yield prefix


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    return load_settings(database_url=database_url, log_format="json", _env_file=None)


@pytest.fixture(autouse=True)
def _error_results_in_plain_words(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every tools/call a test makes through the SDK's client: its error result, if any, says
    nothing in the SDK's or pydantic's words (tests/wording.py)."""
    if request.node.get_closest_marker("sdk_wording") is not None:
        return
    from mcp.client import Client  # noqa: PLC0415 (only the tests that call tools load it)

    from tests.wording import assert_readable  # noqa: PLC0415

    original = Client.call_tool

    async def call_tool(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await original(self, *args, **kwargs)
        assert_readable(result)
        return result

    monkeypatch.setattr(Client, "call_tool", call_tool)
