"""What the tests of ``python -m app`` as an operator runs it share: a minimal production environment, the
one-line refusal, a real server (the fixtures ``app_cli``, ``serve`` and ``migrated`` are in conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli import Outcome
from tests.e2e.isolated import base_env
from tests.e2e.server import LiveServer

SECRET_KEY = "s" * 40
REQUEST_STATE_KEYS = "r" * 40


def production(database_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """A minimal production environment: nothing from the developer's shell leaks in. The
    request-state
    keys are set (each test of another refusal names only its own variable); ``del`` them to test
    theirs."""
    return base_env(**{"APP_ENV": "production", "APP_DATABASE_URL": database_url, "APP_VAR_DIR": str(tmp_path / "var"),
                       "APP_LOG_FORMAT": "json", "APP_BASE_URL": "https://mcp.example.com",
                       "APP_REQUEST_STATE_KEYS": REQUEST_STATE_KEYS, **extra})


def app_subprocess(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def one_line(proc: Outcome | subprocess.CompletedProcess, code: int) -> str:
    """The refusal: exit ``code``, exactly one line on stderr, no traceback anywhere."""
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def live(database_url: str, tmp_path: Path, env: dict[str, str], **extra: str) -> LiveServer:
    return LiveServer(database_url, tmp_path / "server.log", environ=env, cwd=tmp_path, extra_env=extra)
