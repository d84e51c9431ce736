"""A minute of hostile load against two workers on PostgreSQL and Redis (tests/soak.py): normal
callers mixed with slow-body clients, PDF bombs from one anonymous caller and calls whose files'
host answers no DNS. Not one normal call fails, /readyz answers 200 throughout, and no worker's
memory runs away. The longer run, with its figures: ``bench/soak.py`` (docs/performance.md).

Before (issue 38) each of these alone hurt: the slow bodies took a worker past 1.6 GiB, the bombs
held every analysis process, the stalled resolutions turned /readyz to 503."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from tests import filesamples as samples
from tests.conftest import redis_keys
from tests.e2e.server import LiveServer
from tests.filehost import FileServer, serving_files
from tests.soak import Soak, soak_env

pytestmark = pytest.mark.demo("files")

SECONDS = float(os.environ.get("APP_TEST_SOAK_SECONDS", "60"))


@pytest.fixture(scope="module")
def soaked(
    database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, FileServer]]:
    if not database_url.startswith("postgresql"):
        pytest.skip(
            "the soak runs on PostgreSQL and Redis, as deployed (CI's PostgreSQL leg runs it)"
        )
    tmp = tmp_path_factory.mktemp("soak")
    with serving_files() as files, redis_keys(redis_url) as prefix:
        server = LiveServer(
            database_url,
            tmp / "server.log",
            workers=2,
            module="tests.e2e.soak_server",
            extra_env={
                "APP_VAR_DIR": str(tmp / "var"),
                **soak_env(redis_url, prefix, files.origin),
            },
        )
        server.start()
        try:
            yield server, files
        finally:
            server.stop()


def test_a_minute_of_hostile_load_fails_no_normal_call_and_keeps_the_pod_ready(soaked):
    server, files = soaked
    assert server.process is not None
    bomb = files.offer(samples.slow_pdf(), name="bomb.pdf")
    report = asyncio.run(Soak(server.base_url, server.process.pid, bomb, SECONDS).run())
    summary = report.summary()
    print("soak:", summary)
    assert report.normal_failed == [], report.normal_failed[:5]
    assert report.normal_ok > 200, summary
    assert {status for _, status in report.readyz} == {200}, summary
    assert len(report.readyz) > SECONDS, summary  # sampled throughout
    assert len(report.peak_rss_mib) == 2 and max(report.peak_rss_mib.values()) < 400, summary
    # Each kind of hostile caller was there and met its bound.
    assert report.slow_bodies_taken_in and report.slow_bodies_refused, summary
    # (A bomb's own fetch may time out on a loaded machine: the file host runs in this process.)
    assert report.bombs_analysed and report.bombs_refused, summary
    assert report.stalled_waited, summary
