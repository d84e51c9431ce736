"""A copy of the repository and a fresh virtualenv to install it in, as a forker or an operator would.

The fresh venv reuses the test environment's installed dependencies through a
``.pth`` line (no download), but not its ``.pth`` files: the editable install of
THIS checkout is invisible there, so whatever ``app`` it imports is the one
installed into it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

from tests.conftest import ROOT
from tests.demos import tree_auth_env

IGNORED = shutil.ignore_patterns(".git", ".venv", "var", "__pycache__", "node_modules", "*.egg-info", "build",
                                 "dist", ".pytest_cache", ".env")


def copy_repository(target: Path) -> Path:
    shutil.copytree(ROOT, target, ignore=IGNORED)
    return target


def fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=False).create(path)
    python = path / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # This interpreter's packages, and those it reaches through a .pth of its own (a fork's venv
    # running its suite reaches the main tree's this way: a .pth is not read in a folder a .pth added).
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"],
                           *(p for p in sys.path if p.endswith("site-packages"))])
    Path(purelib, "_test_dependencies.pth").write_text("".join(f"{p}\n" for p in paths))
    return python


def pip_install(python: Path, *args: str) -> None:
    proc = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def run(python: Path, *args: str, cwd: Path, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([python, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def base_env(**extra: str) -> dict[str, str]:
    """A minimal environment: nothing from the developer's shell (APP_*, PYTHONPATH) leaks in; the tree's own
    authorization settings (tests/demos.py: none, or an external IdP's without app/authserver)."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "LANG": "C.UTF-8", **tree_auth_env(), **extra}


