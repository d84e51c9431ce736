"""What a forker does first: delete demo features (their folders and the test modules marked with them),
write the migration that drops their tables, migrate the EXISTING database forward, and boot.

As a forker works: the migration is generated against a development SQLite database, then
applied to the existing database of the run's backend (SQLite, or PostgreSQL in CI's
second leg: "develop on SQLite, deploy on PostgreSQL").

Deleting every demo at once, and the built-in authorization server and the speed-up package with them (an
external IdP signs the tokens; uvicorn's own protocol, the SDK's transport and anyio's threads serve), leaves the
core: its unit, integration and end-to-end tests (those that need no fork of their own) run inside the fork, in
external IdP mode, and must pass there, as CI's leg runs them; the fork serves tools/call on both protocol eras.
Deleting one demo shows that the others do not lean on it: the migration drops its tables alone, and the fork's
remaining suite still loads (no module left behind imports the demo), passes `check`, boots and serves what
remains; what the remaining demos' tests assert is the main suite's business, not three more runs of it.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from app.db.migrate import head_revisions
from tests.challenges import CHATGPT_META, plain_call
from tests.conftest import ROOT, empty_database, prepare
from tests.demos import AUTHSERVER, DEMOS, EXTERNAL_IDP, TUNING, demo_test_modules
from tests.e2e.isolated import base_env, copy_repository, fresh_venv, pip_install, run
from tests.e2e.server import LiveServer, free_port

POSTGRES = bool(os.environ.get("APP_TEST_DATABASE_URL"))


@dataclass(frozen=True)
class Removal:
    features: tuple[str, ...]
    dropped: frozenset[str]  # tables the generated migration drops
    kept: tuple[str, int]  # a table that must survive, and its row count
    tools: tuple[str, ...]  # what the fork still serves
    resources: int  # widget templates it still serves (each removed demo takes its widget along)
    runs_suite: bool  # the fork's own suite runs inside it (else it is only collected)
    authserver: bool = False  # app/authserver goes too: the fork runs with an external IdP
    tuning: bool = False  # app/tuning goes too: the fork runs on the stock core

    @property
    def parts(self) -> tuple[str, ...]:
        return (*self.features, *((AUTHSERVER,) if self.authserver else ()), *((TUNING,) if self.tuning else ()))


# The account profile is core; the widget log comes with the widgets, whichever feature declares one.
CORE_TOOLS = ("get_account_profile", "log_widget_event")
RECIPE_TOOLS = ("list_saved_recipes", "save_recipe", "delete_saved_recipe")
FILE_TOOLS = ("analyze_file", "compare_files", "list_files", "delete_file")
ZOO_TOOLS = ("get_zoo_animal_details", "get_zoo_animals", "like_zoo_animal")
DEMO_TABLES = {"zoo": {"zoo_animals"}, "search": {"search_documents"}, "files": {"files"},
               "recipes": {"saved_recipes"}, "cafes": {"cafe_cities", "cafe_city_aliases", "cafe_city_names", "cafes"}}
AUTHSERVER_TABLES = {"accounts", "account_identities", "oauth_clients", "oauth_grants", "oauth_authorization_codes",
                     "oauth_refresh_tokens", "oauth_client_assertions"}
# End-to-end modules that build a venv of their own (a fork inside the fork) stay out of the fork's run.
OWN_VENV = ("tests/e2e/test_fork.py", "tests/e2e/test_startup_refusal.py", "tests/e2e/test_wheel.py")
# And the ones a demo's deletion cannot reach: each starts processes of its own (workers, replicas, a collector)
# to try the process model on the test-only probe feature alone, or checks the deployment files, which a fork
# keeps as they are. They are collected in the fork (its imports hold); running them again there would only
# repeat the main run, at a third of CI's time budget.
STACK_ONLY = ("tests/e2e/test_observability.py", "tests/e2e/test_lifecycle.py", "tests/e2e/test_workers.py",
              "tests/e2e/test_fleet.py", "tests/unit/test_deploy.py")
REMOVALS = [
    Removal(("zoo",), frozenset(DEMO_TABLES["zoo"]), ("search_documents", 5120),
            ("recommend_cafe", "search", *CORE_TOOLS, *RECIPE_TOOLS, *FILE_TOOLS), 4, False),
    # The full-text index rides along: the SQLite FTS5 table by name, the PostgreSQL column with its table.
    # Files keep working without search: their text is simply not indexed.
    Removal(("search",), frozenset(DEMO_TABLES["search"]), ("zoo_animals", 30),
            (*ZOO_TOOLS, "recommend_cafe", *CORE_TOOLS, *RECIPE_TOOLS, *FILE_TOOLS), 4, False),
    Removal(("files",), frozenset(DEMO_TABLES["files"]), ("zoo_animals", 30),
            (*ZOO_TOOLS, "recommend_cafe", "search", *CORE_TOOLS, *RECIPE_TOOLS), 4, False),
    # What a fork starts from: no demo at all, its own IdP instead of the built-in authorization server (its
    # accounts and OAuth state go with it), and no speed-ups. The migrations' version table is all a database then
    # holds of ours.
    Removal(DEMOS, frozenset().union(*DEMO_TABLES.values(), AUTHSERVER_TABLES), ("alembic_version", 1),
            ("get_account_profile",), 0, True, authserver=True, tuning=True),
]


@pytest.fixture(scope="session")
def development_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The forker's development SQLite database as the unforked server left it, migrated and seeded once."""
    path = tmp_path_factory.mktemp("development") / "development.db"
    prepare(f"sqlite:///{path}")
    return path


@pytest.fixture
def existing_database(tmp_path, development_template):
    """The database as the unforked server left it: every feature's tables and data."""
    if not POSTGRES:  # the same migrations and seed as the template: a copy of it
        shutil.copyfile(development_template, tmp_path / "existing.db")
        yield f"sqlite:///{tmp_path / 'existing.db'}"
        return
    url, drop = empty_database(tmp_path, "fork")
    prepare(url)
    yield url
    drop()


def _fork_without(tmp_path: Path, removal: Removal) -> Path:
    fork = copy_repository(tmp_path / "fork")
    marked = demo_test_modules(fork, removal.parts)
    assert marked, f"no test module is marked with {removal.parts}"
    for feature in removal.features:
        shutil.rmtree(fork / "app" / "features" / feature)
    for package, deleted in ((AUTHSERVER, removal.authserver), (TUNING, removal.tuning)):
        if deleted:
            shutil.rmtree(fork / "app" / package)
            # What `git rm -r` leaves on a machine that ran the code: a folder of compiled files only.
            (fork / "app" / package / "__pycache__").mkdir(parents=True)
            (fork / "app" / package / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
    for module in marked:
        module.unlink()
    return fork


# One demo at a time runs in CI's SQLite leg only: the PostgreSQL leg applies the every-demo migration, which
# drops each of these tables too (the full-text column, the foreign keys) on an existing PostgreSQL database.
@pytest.mark.parametrize("removal", [
    pytest.param(r, id="every-demo") if r.runs_suite
    else pytest.param(r, id=r.features[0], marks=pytest.mark.any_database) for r in REMOVALS])
def test_a_fork_without_a_demo_migrates_an_existing_database_boots_and_passes_its_tests(
    tmp_path, existing_database, development_template, removal: Removal
):
    fork = _fork_without(tmp_path, removal)
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "-e", str(fork))
    port = free_port()
    env = base_env(APP_DATABASE_URL=existing_database, APP_BASE_URL=f"http://127.0.0.1:{port}", APP_LOG_FORMAT="json",
                   **(EXTERNAL_IDP if removal.authserver else {}))
    (head,) = head_revisions()
    label = removal.features[0] if len(removal.features) == 1 else "demos"
    name = f"{int(head.split('_')[0]) + 1:04d}_drop_{label}"
    development = tmp_path / "development.db"
    shutil.copyfile(development_template, development)

    # 1. the migration that drops the features' tables, generated from the models that remain
    proc = run(python, "-m", "app", "revision", f"drop {label}", cwd=fork,
               env={**env, "APP_DATABASE_URL": f"sqlite:///{development}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = fork / "migrations" / "versions" / f"{name}.py"
    assert not (ROOT / "migrations" / "versions" / f"{name}.py").exists()  # the fork's, not ours
    upgrade, downgrade = written.read_text().split("def upgrade() -> None:")[1].split("def downgrade")
    operations = set(re.findall(r"\b(?:batch_)?op\.(\w+)\(", upgrade)) - {"batch_alter_table", "f"}
    assert operations <= {"drop_table", "drop_index", "execute"}, upgrade
    assert set(re.findall(r"op\.drop_table\('(\w+)'\)", upgrade)) == removal.dropped, upgrade
    assert set(re.findall(r"op\.execute\('([^']*)'\)", upgrade)) == (
        {"DROP TABLE IF EXISTS search_documents_fts"} if "search" in removal.features else set()), upgrade
    # Generated on SQLite, run on PostgreSQL: the tables come back with generic types (no sa.DATETIME()).
    assert set(re.findall(r"sa\.([A-Z]+)\(", downgrade)) <= {"JSON"}, downgrade

    # 2. the existing database moves forward; what remains keeps its data
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

    # 3. the fork's own checks and tests pass (on the run's backend: the fork's tests build their own database)
    if removal.authserver:  # the built-in mode it no longer has, named in one line
        builtin = {k: v for k, v in env.items() if k not in EXTERNAL_IDP}
        proc = run(python, "-m", "app", "check", cwd=fork, env=builtin)
        assert (proc.returncode, proc.stderr.strip()) == (1, "check: APP_AUTH_MODE: builtin needs the built-in "
                                                          "authorization server (app/authserver), which is not "
                                                          "installed: set APP_AUTH_MODE=external with "
                                                          "APP_OAUTH_ISSUER and APP_OAUTH_JWKS_URL"), proc.stderr
        proc = run(python, "-m", "app", "users", "list", cwd=fork, env=env)
        assert (proc.returncode, proc.stderr.strip()) == (2, "users: a command of the built-in authorization server, "
                                                          "which is not installed (app/authserver): accounts and "
                                                          "clients live in your identity provider"), proc.stderr
    proc = run(python, "-m", "app", "check", cwd=fork, env=env)
    expected = f"ok: {len(removal.tools)} tools, {removal.resources} resources"
    assert (proc.returncode, proc.stdout.strip()) == (0, expected), proc.stdout + proc.stderr
    test_env = {**env, **{k: v for k, v in os.environ.items()
                          if k in ("APP_TEST_DATABASE_URL", "APP_TEST_REDIS_URL", "APP_REQUIRE_REDIS",
                                   "APP_REQUIRE_BROWSER")}}
    ignored = [f"--ignore={m}" for m in OWN_VENV]
    # Run once, in the SQLite leg; the PostgreSQL leg's proof is the migration above and the boot below, which
    # the suite's database tests would only repeat on a fork whose database code is the main tree's.
    if removal.runs_suite and not POSTGRES:
        proc = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", *ignored,
                   *(f"--deselect={m}" for m in STACK_ONLY), cwd=fork, env=test_env, timeout=600)
        summary = re.search(r"(\d+) passed", proc.stdout)
    else:
        proc = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", *ignored, cwd=fork,
                   env=test_env)
        summary = re.search(r"(\d+) tests? collected", proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert summary and int(summary.group(1)) >= 100, proc.stdout[-500:]  # the suite, not an empty selection

    # 4. it boots (seeding what remains) and serves what remains
    server = LiveServer(existing_database, tmp_path / "fork.log", port=port, python=python, cwd=fork, environ=env,
                        extra_env={"APP_SEED_ON_START": "true"}).start(timeout=60)
    try:
        tools = server.rpc("tools/list")["result"]["tools"]
        # The profile tool on both eras (an anonymous ChatGPT call: its linking challenge, as a tool result).
        answers = [plain_call(server.mcp_url, "get_account_profile", version=version, meta=CHATGPT_META)
                   for version in ("2025-06-18", "2026-07-28")]
    finally:
        server.stop()
    assert tuple(sorted(t["name"] for t in tools)) == tuple(sorted(removal.tools))
    for answer in answers:
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert result["isError"] is True and "mcp/www_authenticate" in result["_meta"], result

