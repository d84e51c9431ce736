from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.db.migrate import upgrade
from tests.cli import Outcome, run_cli
from tests.e2e.oauth_client import ClientSite
from tests.e2e.server import LiveServer, free_port
from tests.serving import serving


@pytest.fixture(scope="session")
def live_server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(database_url, tmp_path_factory.mktemp("logs") / "server.log").start()
    yield server
    server.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@dataclass
class Linking:
    server: LiveServer
    site: ClientSite
    var_dir: Path

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def resource(self) -> str:
        return self.server.mcp_url


LINKING_GRANT_CACHE_TTL = 1


@pytest.fixture(scope="session")
def linking(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Linking]:
    """The server, allowed to fetch client documents from a loopback 'chatgpt.com' run by the test."""
    site = ClientSite()
    with serving(lambda base: site.app()) as site_url:
        site.base_url = site_url
        var_dir = tmp_path_factory.mktemp("var")
        host_port = site_url.removeprefix("http://")
        server = LiveServer(database_url, tmp_path_factory.mktemp("logs") / "server.log", extra_env={
            "APP_VAR_DIR": str(var_dir),
            "APP_OAUTH_CIMD_HOSTS": "127.0.0.1,localhost",
            "APP_OUTBOUND_ALLOWLIST": host_port,
            # This suite registers many clients; the limit has its own tests (test_limits.py).
            "APP_LIMIT_REGISTRATIONS_PER_ADDRESS": "1000/hour",
            "APP_LIMIT_REGISTRATIONS_PER_NETWORK": "1000/hour",
            # What a revocation made by another process (the CLI) waits for here: no Redis tells this server.
            "APP_OAUTH_GRANT_CACHE_TTL": str(LINKING_GRANT_CACHE_TTL),
        }).start()
        try:
            yield Linking(server, site, var_dir)
        finally:
            server.stop()


@pytest.fixture
def app_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``python -m app ARGS`` in this process (tests/cli.py)."""
    def run(*args: str, env: dict[str, str], cwd: Path, stdin: str = "") -> Outcome:
        return run_cli(monkeypatch, capsys, *args, env=env, cwd=cwd, stdin=stdin)
    return run


@pytest.fixture
def serve(app_cli):
    def run(env: dict[str, str], cwd: Path) -> Outcome:
        return app_cli("serve", "--port", str(free_port()), env=env, cwd=cwd)
    return run


@pytest.fixture
def migrated(fresh_database: str) -> str:
    upgrade(fresh_database)
    return fresh_database
