"""The server runs from a NON-editable install: the wheel the Dockerfile builds, installed into a fresh venv,
migrates, seeds, checks and serves. (No Docker engine here: the build stage's COPY set is replayed.)

One wheel is built for the module. What the installed server must do is what this checkout does (the same
check, the same seed steps, the same tools), so the test holds for any fork, whatever features it keeps."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from app.main import discover_features
from app.mcp.check import APP_MIME_TYPE
from tests.conftest import ROOT
from tests.demos import authserver_installed
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("wheel")
    source = _dockerfile_build_context(tmp_path / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "-w", str(tmp_path / "dist"), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = (tmp_path / "dist").glob("*.whl")
    return built


def _files(root: Path, prefix: str) -> set[str]:
    return {f"{prefix}/{p.relative_to(root).as_posix()}" for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_image_build_context_makes_a_wheel_with_every_file_of_the_package_and_the_migrations(wheel):
    expected = _files(ROOT / "app", "app") | _files(ROOT / "migrations", "app/migrations")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if not name.endswith("/")}
    assert expected - shipped == set()
    assert {"app/migrations/env.py", "app/migrations/script.py.mako", "app/static/widgets/manifest.json"} <= shipped
    assert not [n for n in shipped if not n.startswith(("app/", "chatgpt_mcp_app_server-"))]


def test_an_installed_wheel_migrates_seeds_checks_and_serves(wheel, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, str(wheel))
    work = tmp_path / "run"  # no source tree here: only the installed package can answer
    work.mkdir()
    port = free_port()
    env = base_env(APP_DATABASE_URL=f"sqlite:///{work / 'app.db'}", APP_BASE_URL=f"http://127.0.0.1:{port}",
                   APP_LOG_FORMAT="json")

    where = run(python, "-c", "import app; print(app.__file__)", cwd=work, env=env)
    assert where.stdout.strip().startswith(str(tmp_path / "venv")), where.stdout + where.stderr
    here = run(Path(sys.executable), "-m", "app", "check", cwd=tmp_path, env=base_env(APP_DATABASE_URL="sqlite://"))
    assert here.returncode == 0 and here.stdout.startswith("ok: "), here.stdout + here.stderr
    features = discover_features()
    steps = [*(["accounts"] if authserver_installed() else []), *(f.name for f in features if f.seed is not None)]
    outputs = {}
    for command in ("migrate", "seed", "check"):
        proc = run(python, "-m", "app", command, cwd=work, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outputs[command] = proc.stdout.splitlines()
    assert outputs["migrate"] == [f"migrated sqlite:///{work / 'app.db'}"]
    assert [line.removeprefix("seeded ").split(":")[0] for line in outputs["seed"]] == steps
    assert outputs["check"] == here.stdout.splitlines()  # the same tools and widgets as this checkout

    server = LiveServer(env["APP_DATABASE_URL"], tmp_path / "wheel.log", port=port, python=python, cwd=work,
                        environ=env).start(timeout=60)
    try:
        tools = server.rpc("tools/list")["result"]["tools"]
        resources = server.rpc("resources/list")["result"]["resources"]
    finally:
        server.stop()
    assert len(tools) == int(re.match(r"ok: (\d+) tools, (\d+) resources", here.stdout).group(1))
    assert len(resources) == int(re.match(r"ok: (\d+) tools, (\d+) resources", here.stdout).group(2))
    assert {r["mimeType"] for r in resources} <= {APP_MIME_TYPE}, resources
