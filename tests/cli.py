"""``python -m app`` run in this process (``app.__main__.main(argv)``), as a subprocess would see it.

The environment is exactly the one given (every ``APP_*`` of this process is hidden, so nothing from the
developer's shell decides the outcome), the working directory is the given one (no stray ``.env`` is read),
stdin is the given text, and what the command printed comes back with its exit code. A ``serve`` that gets
past its refusals would start listening: that is a failure here, never a hang.
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.__main__ import main
from app.logging import configure_logging


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str


class ServerStarted(AssertionError):
    pass


def _no_server(config: object) -> int:
    raise ServerStarted("serve got past its refusals and started a server")


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str, env: dict[str, str],
            cwd: Path, stdin: str = "") -> Outcome:
    import app.http.serving

    saved = dict(os.environ)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    monkeypatch.setattr(app.http.serving, "run_server", _no_server)
    for name in [n for n in os.environ if n.startswith("APP_")]:
        del os.environ[name]
    os.environ.update({k: v for k, v in env.items() if k.startswith("APP_")})
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse, or settings_or_exit on a bad value
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.environ.clear()
        os.environ.update(saved)  # serve writes APP_BASE_URL for its workers
        configure_logging("console", "info", sync=True)  # the command configured its own
    out, err = capsys.readouterr()
    return Outcome(code, out, err)
