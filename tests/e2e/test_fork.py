"""What a forker does first: delete a demo feature, write the migration that drops its tables,
migrate the EXISTING database forward, and boot. Runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import shutil

import pytest
from sqlalchemy import create_engine, inspect, text

from tests.conftest import ROOT, empty_database, prepare
from tests.e2e.isolated import base_env, copy_repository, fresh_venv, pip_install, run
from tests.e2e.server import LiveServer, free_port


@pytest.fixture
def existing_database(tmp_path):
    url, drop = empty_database(tmp_path, "fork")
    prepare(url)  # the database as the unforked server left it: zoo tables, likes and all
    yield url
    drop()


def test_a_fork_without_the_zoo_migrates_an_existing_database_boots_and_passes_its_tests(tmp_path, existing_database):
    fork = copy_repository(tmp_path / "fork")
    shutil.rmtree(fork / "app" / "features" / "zoo")
    (fork / "tests" / "unit" / "test_zoo_service.py").unlink()
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "-e", str(fork))
    port = free_port()
    env = base_env(APP_DATABASE_URL=existing_database, APP_BASE_URL=f"http://127.0.0.1:{port}", APP_LOG_FORMAT="json")

    # 1. the migration that drops the feature's tables, generated from the models that remain
    proc = run(python, "-m", "app", "revision", "drop zoo", cwd=fork, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (written,) = (fork / "migrations" / "versions").glob("0007_drop_zoo.py")
    assert not (ROOT / "migrations" / "versions" / "0007_drop_zoo.py").exists()  # the fork's, not ours
    upgrade_body = written.read_text().split("def upgrade() -> None:")[1].split("def downgrade")[0]
    statements = [line.strip() for line in upgrade_body.splitlines() if line.strip().startswith("op.")]
    assert statements == ["op.drop_table('zoo_animals')"], written.read_text()

    # 2. the existing database moves forward; the other features' data is untouched
    proc = run(python, "-m", "app", "migrate", cwd=fork, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    engine = create_engine(existing_database)
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        versions = list(conn.scalars(text("SELECT version_num FROM alembic_version")))
        documents = conn.execute(text("SELECT count(*) FROM search_documents")).scalar_one()
    engine.dispose()
    assert "zoo_animals" not in tables and {"search_documents", "cafes"} <= tables
    assert versions == ["0007_drop_zoo"] and documents == 5116

    # 3. the fork's own checks and unit tests pass
    proc = run(python, "-m", "app", "check", cwd=fork, env=env)
    assert (proc.returncode, proc.stdout.strip()) == (0, "ok: 2 tools, 2 resources"), proc.stdout + proc.stderr
    proc = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit", cwd=fork, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]

    # 4. it boots (seeding what remains) and serves what remains
    server = LiveServer(existing_database, tmp_path / "fork.log", port=port, python=python, cwd=fork, environ=env,
                        extra_env={"APP_SEED_ON_START": "true"}).start(timeout=60)
    try:
        tools = server.rpc("tools/list")["result"]["tools"]
    finally:
        server.stop()
    assert sorted(t["name"] for t in tools) == ["recommend_cafe", "search"]
