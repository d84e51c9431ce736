from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.server import LiveServer


@pytest.fixture(scope="session")
def live_server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(database_url, tmp_path_factory.mktemp("logs") / "server.log").start()
    yield server
    server.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)
