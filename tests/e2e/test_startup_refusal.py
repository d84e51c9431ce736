"""A server that cannot be served refuses to start: one line, exit 1, even with several workers
(and never the traceback-per-worker loop uvicorn falls into when each worker fails on its own)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tests.e2e.isolated import base_env, copy_repository, fresh_venv, pip_install, run
from tests.e2e.server import free_port


@pytest.fixture(scope="module")
def fork(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("refusal")
    tree = copy_repository(root / "tree")
    python = fresh_venv(root / "venv")
    pip_install(python, "-e", str(tree))
    return tree, python


def _serve(tree: Path, python: Path, tmp_path: Path) -> tuple[int, list[str]]:
    env = base_env(APP_DATABASE_URL=f"sqlite:///{tmp_path / 'app.db'}")
    proc = run(python, "-m", "app", "serve", "--workers", "2", "--port", str(free_port()), cwd=tree, env=env,
               timeout=60)
    return proc.returncode, (proc.stdout + proc.stderr).strip().splitlines()


def test_a_feature_folder_without_init_stops_the_server_with_one_line(fork, tmp_path):
    tree, python = fork
    broken = tree / "app" / "features" / "broken"
    broken.mkdir()
    (broken / "tool.py").write_text("x = 1\n")
    try:
        code, lines = _serve(tree, python, tmp_path)
    finally:
        shutil.rmtree(broken)
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("serve: ") and "broken is not a feature" in lines[0], lines


def test_a_tool_name_declared_twice_stops_the_server_with_one_line(fork, tmp_path):
    tree, python = fork
    twin = tree / "app" / "features" / "twin"
    twin.mkdir()
    (twin / "__init__.py").write_text(textwrap.dedent("""
        from app.auth.schemes import NOAUTH
        from app.feature import Feature

        def tools(registry, deps):
            # A core tool's name: every server has it, whatever demos a fork kept.
            @registry.tool(name="get_account_profile", title="Profile again", description="d", read_only=True,
                           destructive=False, open_world=False, security=[NOAUTH])
            async def get_account_profile(q: str) -> str:
                return q

        FEATURE = Feature(name="twin", tools=tools)
    """))
    try:
        code, lines = _serve(tree, python, tmp_path)
    finally:
        shutil.rmtree(twin)
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("serve: tool 'get_account_profile' is declared twice: by "), lines
