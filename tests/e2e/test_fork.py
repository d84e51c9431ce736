"""What a forker does first: delete a demo feature, write the migration that drops its tables,
migrate the EXISTING database forward, and boot.

As a forker works: the migration is generated against a development SQLite database, then
applied to the existing database of the run's backend (SQLite, or PostgreSQL in CI's
second leg: "develop on SQLite, deploy on PostgreSQL").
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass

import pytest
from sqlalchemy import create_engine, inspect, text

from app.db.migrate import head_revisions
from tests.conftest import ROOT, empty_database, prepare
from tests.e2e.isolated import base_env, copy_repository, fresh_venv, pip_install, run
from tests.e2e.server import LiveServer, free_port

POSTGRES = bool(os.environ.get("APP_TEST_DATABASE_URL"))


@dataclass(frozen=True)
class Removal:
    feature: str
    its_tests: tuple[str, ...]  # what the forker deletes with the folder
    dropped: frozenset[str]  # tables the generated migration drops
    kept: tuple[str, int]  # a table of another feature, and its row count, that must survive
    tools: tuple[str, ...]  # what the fork still serves
    resources: int = 4  # widget templates it still serves (each removed demo takes its widget along)


# The widget log comes with the widgets, whichever features remain.
ACCOUNT_TOOLS = ("get_account_profile", "list_saved_recipes", "save_recipe", "delete_saved_recipe", "log_widget_event")
FILE_TOOLS = ("analyze_file", "compare_files", "list_files", "delete_file")
ZOO_TOOLS = ("get_zoo_animal_details", "get_zoo_animals", "like_zoo_animal")
BOTH_FILES_AND_SEARCH = "tests/integration/test_search_private_files.py"
REMOVALS = [
    Removal("zoo", ("tests/unit/test_zoo_service.py", "tests/integration/test_zoo.py"),
            frozenset({"zoo_animals"}), ("search_documents", 5120),
            ("recommend_cafe", "search", *ACCOUNT_TOOLS, *FILE_TOOLS)),
    # The full-text index rides along: the SQLite FTS5 table by name, the PostgreSQL column with its table.
    # Files keep working without search: their text is simply not indexed.
    Removal("search", ("tests/unit/test_search_results.py", "tests/integration/test_search.py", BOTH_FILES_AND_SEARCH),
            frozenset({"search_documents"}), ("zoo_animals", 30),
            (*ZOO_TOOLS, "recommend_cafe", *ACCOUNT_TOOLS, *FILE_TOOLS)),
    Removal("files", ("tests/unit/test_file_analysis.py", "tests/unit/test_files_units.py",
                      "tests/integration/test_files.py", "tests/integration/test_files_faults.py",
                      BOTH_FILES_AND_SEARCH),
            frozenset({"files"}), ("zoo_animals", 30), (*ZOO_TOOLS, "recommend_cafe", "search", *ACCOUNT_TOOLS)),
]


@pytest.fixture
def existing_database(tmp_path):
    url, drop = empty_database(tmp_path, "fork")
    prepare(url)  # the database as the unforked server left it: every feature's tables and data
    yield url
    drop()


@pytest.mark.parametrize("removal", REMOVALS, ids=[r.feature for r in REMOVALS])
def test_a_fork_without_a_demo_migrates_an_existing_database_boots_and_passes_its_tests(
    tmp_path, existing_database, removal: Removal
):
    fork = copy_repository(tmp_path / "fork")
    shutil.rmtree(fork / "app" / "features" / removal.feature)
    for test in removal.its_tests:
        (fork / test).unlink()
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "-e", str(fork))
    port = free_port()
    env = base_env(APP_DATABASE_URL=existing_database, APP_BASE_URL=f"http://127.0.0.1:{port}", APP_LOG_FORMAT="json")
    (head,) = head_revisions()
    name = f"{int(head.split('_')[0]) + 1:04d}_drop_{removal.feature}"
    development = f"sqlite:///{tmp_path / 'development.db'}"
    prepare(development)

    # 1. the migration that drops the feature's tables, generated from the models that remain
    proc = run(python, "-m", "app", "revision", f"drop {removal.feature}", cwd=fork,
               env={**env, "APP_DATABASE_URL": development})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = fork / "migrations" / "versions" / f"{name}.py"
    assert not (ROOT / "migrations" / "versions" / f"{name}.py").exists()  # the fork's, not ours
    upgrade = written.read_text().split("def upgrade() -> None:")[1].split("def downgrade")[0]
    operations = set(re.findall(r"\b(?:batch_)?op\.(\w+)\(", upgrade)) - {"batch_alter_table", "f"}
    assert operations <= {"drop_table", "drop_index", "execute"}, upgrade
    assert set(re.findall(r"op\.drop_table\('(\w+)'\)", upgrade)) == removal.dropped, upgrade
    assert set(re.findall(r"op\.execute\('([^']*)'\)", upgrade)) == (
        {"DROP TABLE IF EXISTS search_documents_fts"} if removal.feature == "search" else set()), upgrade

    # 2. the existing database moves forward; the other features' data is untouched
    proc = run(python, "-m", "app", "migrate", cwd=fork, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    engine = create_engine(existing_database)
    with engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
        versions = list(conn.scalars(text("SELECT version_num FROM alembic_version")))
        kept_rows = conn.execute(text(f"SELECT count(*) FROM {removal.kept[0]}")).scalar_one()
    engine.dispose()
    assert not tables & removal.dropped and removal.kept[0] in tables
    assert versions == [name] and kept_rows == removal.kept[1]

    # 3. the fork's own checks and unit tests pass
    proc = run(python, "-m", "app", "check", cwd=fork, env=env)
    expected = f"ok: {len(removal.tools)} tools, {removal.resources} resources"
    assert (proc.returncode, proc.stdout.strip()) == (0, expected), proc.stdout + proc.stderr
    test_env = {**env, **({"APP_TEST_DATABASE_URL": os.environ["APP_TEST_DATABASE_URL"]} if POSTGRES else {})}
    proc = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit", "tests/integration", cwd=fork,
               env=test_env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]

    # 4. it boots (seeding what remains) and serves what remains
    server = LiveServer(existing_database, tmp_path / "fork.log", port=port, python=python, cwd=fork, environ=env,
                        extra_env={"APP_SEED_ON_START": "true"}).start(timeout=60)
    try:
        tools = server.rpc("tools/list")["result"]["tools"]
    finally:
        server.stop()
    assert tuple(sorted(t["name"] for t in tools)) == tuple(sorted(removal.tools))
