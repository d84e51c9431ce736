"""``python -m app`` run in this process (``app.__main__.main(argv)``), as a subprocess would see it.

The ``APP_*`` variables are exactly the given ones (every ``APP_*`` of this process is hidden, so nothing
from the developer's shell decides the outcome; the app reads no other), the working directory is the given
one (no stray ``.env`` is read), stdin is the given text, and what the command printed comes back with its
exit code. A ``serve`` that gets
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
    os.environ.update({k: v for k, v in env.items() if k.startswith("APP_")})  # PATH, HOME: this process's
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse, or settings_or_exit on a bad value: as the interpreter would exit
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    finally:
        for name in [n for n in os.environ if n not in saved or os.environ[n] != saved[n]]:
            del os.environ[name]  # serve writes APP_BASE_URL for its workers
        os.environ.update(saved)
        configure_logging("console", "info", sync=True)  # the command configured its own
    out, err = capsys.readouterr()
    return Outcome(code, out, err)
