"""Run the real server (``python -m app serve``) in a subprocess on a free loopback port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LiveServer:
    database_url: str
    log_path: Path
    workers: int = 1
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    # Another interpreter and directory: a fresh venv with an installed wheel or a fork.
    python: Path = Path(sys.executable)
    cwd: Path = ROOT
    # The environment to start from (default: this process's). Isolated runs pass a minimal one.
    environ: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = None
    environ_used: dict[str, str] = field(default_factory=dict)  # what the process was started with
    # What runs: `python -m app serve` (the server as deployed), or tests/e2e/probe_server.py (the same HTTP
    # stack serving a test-only feature, for tests that must not depend on a demo).
    module: str = "app"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def start(self, timeout: float = 30.0) -> LiveServer:
        env = self.environ_used = {**(os.environ if self.environ is None else self.environ),
               "APP_DATABASE_URL": self.database_url, "APP_LOG_FORMAT": "json",
               "APP_BASE_URL": self.base_url, "APP_MIGRATE_ON_START": "false", "APP_SEED_ON_START": "false",
               # Uploaded files (the spool, the local objects) go beside the log, never into the working tree's var/.
               "APP_FILES_DIR": str(self.log_path.parent / "files"),
               "APP_STORAGE_DIR": str(self.log_path.parent / "files"),
               **self.extra_env}
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [self.python, "-m", self.module, *(["serve"] if self.module == "app" else []), "--port", str(self.port),
             "--workers", str(self.workers)],
            cwd=self.cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log_path.read_text()[-4000:]}")
            try:
                if httpx.get(f"{self.base_url}/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)  # readiness polling of a child process, not a test delay
        self.stop()
        raise RuntimeError(f"server not ready in {timeout}s:\n{self.log_path.read_text()[-4000:]}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if getattr(self, "_log", None):
            self._log.close()

    def rpc(self, method: str, params: dict | None = None) -> dict:
        """One JSON-RPC request on the 2025-06-18 path; returns the decoded response."""
        resp = httpx.post(self.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                          headers={"accept": "application/json, text/event-stream",
                                   "mcp-protocol-version": "2025-06-18"}, timeout=10)
        return resp.json()

    def log_lines(self) -> list[str]:
        """The whole lines of the log so far: a worker may be writing its next batch while this reads."""
        text = self.log_path.read_text(encoding="utf-8", errors="replace")
        return text[:text.rfind("\n") + 1].splitlines()

    def settled_log(self, timeout: float = 30.0) -> list[dict]:
        """Every JSON line the server has logged so far, once its log writer has caught up: a request marked
        with an id of its own is sent, and the log is read when that request's line is in it (lines are
        written in order, by one thread per worker; with several workers, ask each until all have it).
        The workers share one listening socket and the kernel wakes whichever accepts first: asked one
        request at a time, the worker that just answered is the one awake and takes every next one (CI
        saw 10 s of that), so several workers are asked in bursts, each request on a connection of its
        own, which one worker cannot all take while it is busy with the first."""
        marker = f"log-barrier-{uuid.uuid4().hex}"
        deadline = time.monotonic() + timeout
        pids: set[int] = set()
        burst = 1 if self.workers == 1 else 4 * self.workers
        with ThreadPoolExecutor(burst) as pool:
            while True:
                list(pool.map(lambda _: httpx.get(f"{self.base_url}/healthz", timeout=5,
                                                  headers={"x-request-id": marker}), range(burst)))
                events = [json.loads(line) for line in self.log_lines() if line.startswith("{")]
                pids |= {e["pid"] for e in events if e.get("request_id") == marker}
                if len(pids) >= self.workers:
                    return [e for e in events if e.get("request_id") != marker]
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the server's log did not catch up within {timeout}s")
                time.sleep(0.05)  # waiting for the log writer thread, not a test delay
