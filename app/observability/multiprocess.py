"""The directory prometheus-client's multiprocess mode shares between uvicorn workers, and its bookkeeping.

Apart from ``app.observability.metrics`` because of an ordering rule: ``PROMETHEUS_MULTIPROC_DIR`` must be
set before prometheus-client is first imported (it picks its value class then), so ``serve`` prepares the
directory with this module before it imports anything that imports prometheus-client.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
_LIVE_FILE = re.compile(r"^gauge_live\w*?_(\d+)\.db$")
# What prometheus-client writes there, and nothing else: the directory may be shared (a SQLite database beside it).
_SAMPLE_FILE = re.compile(r"^(counter|histogram|summary|gauge_(live)?(all|sum|min|max|mostrecent))_\d+\.db$")


class MetricsDirError(ValueError):
    """APP_METRICS_DIR cannot be used; the message is one line naming it."""


def forget_dead_processes(path: str) -> list[int]:
    """Drop the live gauges (``livesum`` and kin) of worker processes that are gone: a worker uvicorn
    replaced would otherwise hold, say, its connections in use in the sum forever."""
    dead = []
    try:
        names = os.listdir(path)
    except OSError:
        return dead
    for name in names:
        match = _LIVE_FILE.match(name)
        if match and not _alive(pid := int(match.group(1))):
            from prometheus_client.multiprocess import mark_process_dead

            try:
                mark_process_dead(pid, path)
            except OSError:  # a scrape beside this one (two Prometheus replicas) removed it first
                pass
            dead.append(pid)
    return dead


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    try:  # a zombie (dead, not yet reaped by its parent) answers signals too
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def prepare_multiprocess_dir(configured: str | None) -> str:
    """Before any worker starts (and before prometheus-client is imported here): the directory every worker
    writes its samples to, emptied of an earlier run's. None: a fresh temporary directory, removed at exit."""
    if configured:
        path = Path(configured)
        try:
            path.mkdir(parents=True, exist_ok=True)
            for stale in path.iterdir():
                if _SAMPLE_FILE.match(stale.name):
                    stale.unlink()
            probe = path / f".write-test-{os.getpid()}"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise MetricsDirError(f"APP_METRICS_DIR: {configured} is not a writable directory ({exc.strerror}); "
                                  "on a read-only root filesystem mount an emptyDir (or tmpfs) there") from None
    else:
        try:
            path = Path(tempfile.mkdtemp(prefix="app-metrics-"))
        except OSError as exc:
            raise MetricsDirError(f"APP_METRICS_DIR: no writable temporary directory for the metrics files "
                                  f"({exc.strerror}); set APP_METRICS_DIR to a writable mount") from None
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    os.environ[MULTIPROCESS_ENV] = str(path)
    return str(path)
