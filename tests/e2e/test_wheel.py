"""The server runs from a NON-editable install: the wheel the Dockerfile builds, installed into a fresh venv,
migrates, seeds, checks and serves. (No Docker engine here: the build stage's COPY set is replayed.)"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT
from tests.e2e.isolated import IGNORED, base_env, fresh_venv, pip_install, run
from tests.e2e.server import LiveServer, free_port


def _dockerfile_build_context(target: Path) -> Path:
    """Exactly what the Dockerfile's build stage COPYs: the image is built from this and nothing else."""
    build_stage = re.split(r"^FROM ", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)[1]
    for line in build_stage.splitlines():
        if not line.startswith("COPY "):
            continue
        *sources, dest = line.split()[1:]
        for source in sources:
            to = target / Path(source).name if dest.endswith("/") else target / dest
            if (ROOT / source).is_dir():
                shutil.copytree(ROOT / source, to, ignore=IGNORED)
            else:
                to.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / source, to)
    return target


def _wheel(tmp_path: Path) -> tuple[Path, Path]:
    source = _dockerfile_build_context(tmp_path / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(tmp_path / "dist"), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return source, wheel


def _files(root: Path, prefix: str) -> set[str]:
    return {f"{prefix}/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_image_build_context_makes_a_wheel_with_every_file_of_the_package_and_the_migrations(tmp_path):
    _, wheel = _wheel(tmp_path)
    expected = _files(ROOT / "app", "app") | _files(ROOT / "migrations", "app/migrations")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if not name.endswith("/")}
    assert expected - shipped == set()
    assert {"app/features/search/data/corpus.jsonl.gz", "app/features/search/data/NOTICE.txt",
            "app/migrations/env.py", "app/migrations/script.py.mako"} <= shipped
    assert not [n for n in shipped if not n.startswith(("app/", "chatgpt_mcp_app_server-"))]


def test_an_installed_wheel_migrates_seeds_checks_and_serves(tmp_path):
    _, wheel = _wheel(tmp_path)
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, str(wheel))
    work = tmp_path / "run"  # no source tree here: only the installed package can answer
    work.mkdir()
    port = free_port()
    env = base_env(APP_DATABASE_URL=f"sqlite:///{work / 'app.db'}", APP_BASE_URL=f"http://127.0.0.1:{port}",
                   APP_LOG_FORMAT="json")

    where = run(python, "-c", "import app; print(app.__file__)", cwd=work, env=env)
    assert where.stdout.strip().startswith(str(tmp_path / "venv")), where.stdout + where.stderr
    for command, expected in (("migrate", "migrated "), ("seed", "seeded search: 5116 documents"),
                              ("check", "ok: 14 tools, 5 resources")):
        proc = run(python, "-m", "app", command, cwd=work, env=env)
        assert proc.returncode == 0 and expected in proc.stdout, proc.stdout + proc.stderr

    server = LiveServer(env["APP_DATABASE_URL"], tmp_path / "wheel.log", port=port, python=python, cwd=work,
                        environ=env).start(timeout=60)
    try:
        result = server.rpc("tools/call", {"name": "search", "arguments": {"q": "asyncio gather"}})["result"]
    finally:
        server.stop()
    assert result["structuredContent"]["results"][0]["title"] == "asyncio.gather"
