"""The soak, longer than CI's minute: normal callers mixed with slow-body clients, PDF bombs and
stalled resolutions against two workers on PostgreSQL and Redis (the driver: ``tests/soak.py``; the
server: ``tests/e2e/soak_server.py``, ``serve``'s stack with a resolver that stalls one name).

Prints the normal calls' success rate and p99, ``/readyz``'s answers, each worker's peak RSS, what
the hostile callers met, and RSS per worker over time (one line per 30 s).

Usage: ``python bench/soak.py [--seconds 300] [--database URL] [--redis URL] [--json PATH]``
(defaults: CI's PostgreSQL, ``postgresql+psycopg://postgres@127.0.0.1:5432/test``, in a schema of
its own, and ``redis://127.0.0.1:6379/0`` under a prefix of its own).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests import filesamples as samples  # noqa: E402 (the repository's root, above)
from tests.conftest import empty_database, prepare, redis_keys  # noqa: E402
from tests.e2e.server import LiveServer  # noqa: E402
from tests.filehost import serving_files  # noqa: E402
from tests.soak import Soak, soak_env  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--database", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["APP_TEST_DATABASE_URL"] = args.database
    with tempfile.TemporaryDirectory() as tmp:
        url, drop = empty_database(Path(tmp), "soak")
        try:
            prepare(url)
            with serving_files() as files, redis_keys(args.redis) as prefix:
                server = LiveServer(
                    url,
                    Path(tmp) / "server.log",
                    workers=2,
                    module="tests.e2e.soak_server",
                    extra_env={
                        "APP_VAR_DIR": f"{tmp}/var",
                        **soak_env(args.redis, prefix, files.origin),
                    },
                )
                server.start()
                try:
                    assert server.process is not None
                    bomb = files.offer(samples.slow_pdf(), name="bomb.pdf")
                    report = asyncio.run(
                        Soak(server.base_url, server.process.pid, bomb, args.seconds).run()
                    )
                finally:
                    server.stop()
        finally:
            drop()
    summary = report.summary()
    print(json.dumps(summary, indent=2))
    for pid, samples_ in report.rss_mib.items():
        every_30s = [f"{at:>5.0f}s {mib} MiB" for at, mib in samples_[::60]]
        print(f"worker {pid}: " + ", ".join(every_30s))
    ready = [at for at, status in report.readyz if status != 200]
    print(f"/readyz not 200 at: {ready or 'never'}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    **summary,
                    "rss_mib": {str(p): s for p, s in report.rss_mib.items()},
                    "readyz": report.readyz,
                },
                indent=2,
            )
        )
    return 0 if not report.normal_failed else 1


if __name__ == "__main__":
    raise SystemExit(main())
