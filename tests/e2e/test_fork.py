"""What a forker does first: delete demo features (their folders, the test modules marked with
them, their widgets and deployment lines), write the migration that drops their tables, migrate
the EXISTING database forward, test, and boot: exactly the steps docs/forking.md prints, read from
its ```bash blocks (tests/forking_doc.py) and run in a copy of the working tree made a git
repository of its own.

As a forker works: the migration is generated against a development SQLite database, then
applied to the existing database of the run's backend (SQLite, or PostgreSQL in CI's
second leg: "develop on SQLite, deploy on PostgreSQL").

Deleting every demo at once, and the built-in authorization server and the speed-up package with
them (an external IdP signs the tokens; uvicorn's own protocol, the SDK's transport and anyio's
threads serve), leaves the core: the fork's ``./dev test`` (lint, types, the widgets' checks,
``check``, and its unit, integration and end-to-end tests, those that need no fork of their own)
runs inside the fork, in external IdP mode, and must pass there, as CI's leg runs it; the fork
serves tools/call on both protocol eras.
Deleting one demo shows that the others do not lean on it: the migration drops its tables alone, and the fork's
remaining suite still loads (no module left behind imports the demo), passes `check`, boots and serves what
remains; what the remaining demos' tests assert is the main suite's business, not three more runs of it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from app.db.migrate import head_revisions
from tests.challenges import CHATGPT_META, plain_call
from tests.conftest import ROOT, empty_database, prepare
from tests.demos import AUTHSERVER, DEMOS, EXTERNAL_IDP, TUNING, demo_test_modules
from tests.e2e.fake_idp import FakeIdp
from tests.e2e.isolated import base_env, copy_repository, fresh_venv, pip_install, run
from tests.e2e.server import LiveServer, free_port
from tests.forking_doc import (
    AUTHSERVER_SECTION,
    DEMO_SECTION,
    FINISH,
    TUNING_SECTION,
    deletions,
    finish,
    for_demo,
)
from tests.serving import serving

POSTGRES = bool(os.environ.get("APP_TEST_DATABASE_URL"))


@dataclass(frozen=True)
class Removal:
    features: tuple[str, ...]
    dropped: frozenset[str]  # tables the generated migration drops
    kept: tuple[str, int]  # a table that must survive, and its row count
    runs_suite: bool  # the fork's own suite runs inside it (else it is only collected)
    authserver: bool = False  # app/authserver goes too: the fork runs with an external IdP
    tuning: bool = False  # app/tuning goes too: the fork runs on the stock core

    @property
    def parts(self) -> tuple[str, ...]:
        return (*self.features, *((AUTHSERVER,) if self.authserver else ()), *((TUNING,) if self.tuning else ()))

    @property
    def sections(self) -> tuple[str, ...]:
        """The sections of docs/forking.md this removal follows."""
        return (DEMO_SECTION, *((AUTHSERVER_SECTION,) if self.authserver else ()),
                *((TUNING_SECTION,) if self.tuning else ()))


# What each demo serves, one widget each: a fork serves what this tree serves but the demos it
# removed, and the widget log (which comes with the widgets, whoever declares one) while any widget
# remains. A feature of the forker's own stays in every fork.
DEMO_TOOLS = {"cafes": ("recommend_cafe",), "search": ("search",),
              "recipes": ("list_saved_recipes", "save_recipe", "delete_saved_recipe"),
              "files": ("analyze_file", "compare_files", "list_files", "delete_file", "open_file"),
              "zoo": ("get_zoo_animal_details", "get_zoo_animals", "like_zoo_animal")}
WIDGET_LOG = "log_widget_event"
# The @-mention search comes with the features that offer something to mention, while one remains.
MENTIONS, MENTION_SOURCES = "search_mentions", {"files", "recipes", "search"}
# The settings tools come with the features that give the account's settings a section.
SETTINGS, SETTINGS_SOURCES = {"read_settings", "update_settings"}, {
    "cafes", "files", "recipes", "search", "zoo"}
DEMO_TABLES = {"zoo": {"zoo_animals", "zoo_animal_texts"}, "search": {"search_documents"},
               "files": {"files"}, "recipes": {"saved_recipes"},
               "cafes": {"cafe_cities", "cafe_city_aliases", "cafe_city_names", "cafes", "cafe_texts"}}
AUTHSERVER_TABLES = {"accounts", "account_identities", "oauth_clients", "oauth_grants", "oauth_authorization_codes",
                     "oauth_refresh_tokens", "oauth_client_assertions"}
# This module goes with the first demo a fork removes (its mark: every demo), as the page's grep
# finds it; the modules that build a venv of their own (test_wheel, test_startup_refusal,
# test_new_feature) stay and run in the every-demo fork, as a forker's ./dev test runs them.
pytestmark = pytest.mark.demo(*DEMOS)
# And the ones a demo's deletion cannot reach: each starts processes of its own (workers, replicas,
# a collector) to try the process model on the test-only probe feature alone. They are collected in
# the fork (its imports hold); running them again there would only repeat the main run, at a third
# of CI's time budget.
STACK_ONLY = ("tests/e2e/test_observability.py", "tests/e2e/test_lifecycle.py", "tests/e2e/test_workers.py",
              "tests/e2e/test_fleet.py", "tests/e2e/test_readiness_under_outbound_load.py",
              "tests/e2e/test_request_state.py", "tests/e2e/test_conformance.py",
              "tests/e2e/test_conformance_authorization.py",
              # two probe servers sharing Redis, to time a revocation between them
              "tests/e2e/test_revocation_bound.py")
REMOVALS = [
    Removal(("zoo",), frozenset(DEMO_TABLES["zoo"]), ("search_documents", 5215), False),
    # The full-text index rides along: the SQLite FTS5 table by name, the PostgreSQL column with its table.
    # Files keep working without search: their text is simply not indexed.
    Removal(("search",), frozenset(DEMO_TABLES["search"]), ("zoo_animals", 30), False),
    # With its deployment lines (the sweeper, its spool), checked in the every-demo fork.
    Removal(("files",), frozenset(DEMO_TABLES["files"]), ("zoo_animals", 30), False),
    # What a fork starts from: no demo at all, its own IdP instead of the built-in authorization server (its
    # accounts and OAuth state go with it), and no speed-ups. The migrations' version table is all a database then
    # holds of ours.
    Removal(DEMOS, frozenset().union(*DEMO_TABLES.values(), AUTHSERVER_TABLES),
            ("alembic_version", 1), True, authserver=True, tuning=True),
]
# The npm packages ./dev needs in the fork (`widgets`, and `test`'s conformance suite): the main
# tree's, linked in entry by entry, so that ./dev finds them installed while a build's scratch
# folders stay the fork's own.
NODE_PACKAGES = ("widgets", "tools/conformance")
BUILD_SCRATCH = (".widget-staging", ".widget-build", ".vite")


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


@pytest.fixture(scope="module")
def served(live_server: LiveServer) -> tuple[list[str], int]:
    """The tools and the number of widget templates this tree serves (the demos, and the forker's
    own features)."""
    tools = sorted(t["name"] for t in live_server.rpc("tools/list")["result"]["tools"])
    return tools, len(live_server.rpc("resources/list")["result"]["resources"])


def _link_node_packages(fork: Path) -> None:
    for folder in NODE_PACKAGES:
        installed, lock = ROOT / folder / "node_modules", ROOT / folder / "package-lock.json"
        stamp = installed / ".package-lock.json"
        # Else ./dev would run `npm ci` in the fork (the network, minutes): the main tree's are it.
        if not stamp.is_file() or lock.stat().st_mtime > stamp.stat().st_mtime:
            pytest.skip(f"{folder}/node_modules is missing or older than its lock file: "
                        "./dev test installs it")
        (fork / folder / "node_modules").mkdir()
        for entry in installed.iterdir():
            if entry.name not in BUILD_SCRATCH:
                (fork / folder / "node_modules" / entry.name).symlink_to(entry)


def _dev_test(fork: Path, args: list[str], env: dict[str, str], timeout: float
              ) -> subprocess.CompletedProcess:
    """``./dev test ARGS`` in the fork; over ``timeout``, a failure showing where it had got to."""
    try:
        return subprocess.run(["./dev", "test", *args], cwd=fork, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        pytest.fail(f"./dev test {' '.join(args)} ran over {timeout} s in the fork:\n"
                    f"{(out or '')[-3000:]}")


def _shell(fork: Path, script: str, env: dict[str, str]) -> None:
    """A block of docs/forking.md, as printed, stopping at its first failing command."""
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=fork, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, f"{script}\n{proc.stdout}{proc.stderr}"


def _fork_without(tmp_path: Path, removal: Removal, env: dict[str, str]) -> tuple[Path, Path]:
    """The copy of the repository after the deletions docs/forking.md prints, and the python of
    its .venv (the fork's own editable install, which ./dev uses as it finds it)."""
    fork = copy_repository(tmp_path / "fork")
    _link_node_packages(fork)
    python = fresh_venv(fork / ".venv")
    pip_install(python, "-e", str(fork))
    # ./dev's marks: the venv holds what pyproject.toml asks, the server's and the test tooling's
    # (the fork's venv sees this one's packages).
    for mark in (".installed", ".installed-dev"):
        (fork / ".venv" / mark).touch()
    # A clone that ran the code: its deletions leave untracked compiled files behind (`git rm -r`
    # of a package leaves a folder of __pycache__, which Python takes for a namespace package).
    author = ["-c", "user.name=fork", "-c", "user.email=fork@example.invalid"]
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", *author, "commit", "-q", "-m", "fork"],
                    [str(python), "-m", "compileall", "-q", "app"]):
        subprocess.run(command, cwd=fork, env=env, check=True, capture_output=True, timeout=120)
    marked = demo_test_modules(fork, removal.parts)
    assert marked, f"no test module is marked with {removal.parts}"
    for section in removal.sections:
        assert finish(fork, section) == FINISH[section]  # the steps after: performed below
    tests_before = set((fork / "tests").rglob("*.py"))
    for feature in removal.features:
        _shell(fork, for_demo(deletions(fork, DEMO_SECTION), feature), env)
    for section in removal.sections[1:]:
        _shell(fork, deletions(fork, section), env)
    # The page's grep reads lines, the marks are code: it took exactly the marked modules, no more.
    assert {path for path in tests_before if not path.exists()} == set(marked)
    assert (fork / "app" / "features" / removal.features[0] / "__pycache__").is_dir()
    return fork, python


# One demo at a time runs in CI's SQLite leg only: the PostgreSQL leg applies the every-demo migration, which
# drops each of these tables too (the full-text column, the foreign keys) on an existing PostgreSQL database.
@pytest.mark.parametrize("removal", [
    pytest.param(r, id="every-demo") if r.runs_suite
    else pytest.param(r, id=r.features[0], marks=pytest.mark.any_database) for r in REMOVALS])
def test_a_fork_without_a_demo_migrates_an_existing_database_boots_and_passes_its_tests(
    tmp_path, existing_database, development_template, served, removal: Removal
):
    port = free_port()
    # The IdP's settings stand for the page's `export` (the same names: tests/forking_doc.py).
    env = base_env(APP_DATABASE_URL=existing_database, APP_BASE_URL=f"http://127.0.0.1:{port}", APP_LOG_FORMAT="json",
                   **(EXTERNAL_IDP if removal.authserver else {}))
    fork, python = _fork_without(tmp_path, removal, env)
    (head,) = head_revisions()
    label = removal.features[0] if len(removal.features) == 1 else "demos"
    name = f"{int(head.split('_')[0]) + 1:04d}_drop_{label}"
    development = tmp_path / "development.db"
    shutil.copyfile(development_template, development)
    gone = {tool for feature in removal.features for tool in DEMO_TOOLS[feature]}
    if MENTION_SOURCES <= set(removal.features):
        gone.add(MENTIONS)
    if SETTINGS_SOURCES <= set(removal.features):
        gone |= SETTINGS
    resources = served[1] - len(removal.features)
    tools = sorted(set(served[0]) - gone - (set() if resources else {WIDGET_LOG}))

    # 1. the widgets rebuilt without theirs, and the migration that drops the features' tables,
    # generated from the models that remain (the demo section's steps, with $demo the label: one
    # migration for all of them)
    proc = subprocess.run(["./dev", "widgets"], cwd=fork, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = json.loads((fork / "app" / "static" / "widgets" / "manifest.json").read_text())
    assert len(manifest["widgets"]) == resources, manifest
    proc = subprocess.run(["./dev", "revision", f"drop {label}"], cwd=fork, capture_output=True,
                          text=True, timeout=180,
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
    proc = subprocess.run(["./dev", "migrate"], cwd=fork, env=env, capture_output=True, text=True,
                          timeout=180)
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
    expected = f"ok: {len(tools)} tools, {resources} resources"
    assert (proc.returncode, proc.stdout.strip()) == (0, expected), proc.stdout + proc.stderr
    test_env = {**env, **{k: v for k, v in os.environ.items()
                          if k in ("APP_TEST_DATABASE_URL", "APP_TEST_REDIS_URL", "APP_REQUIRE_REDIS",
                                   "APP_REQUIRE_BROWSER", "APP_REQUIRE_KUBECTL",
                                   "APP_REQUIRE_CADDY")}}
    # `./dev test` whole, once, in the SQLite leg; the PostgreSQL leg's proof is the migration above
    # and the boot below, which the suite's database tests would only repeat on a fork whose
    # database code is the main tree's.
    if removal.runs_suite and not POSTGRES:
        deselected = [f"--deselect={m}" for m in STACK_ONLY]
        # Each limits test runs once, as one process: its two-replica run is the same test code
        # on the same core, which the main suite runs (eight stacks of two servers, 2 min of
        # the CI machine's 15).
        proc = _dev_test(fork, ["-q", "-n", "2", "-k", "not replicas", *deselected], test_env,
                         timeout=600)
        # pytest's summary, not vitest's
        summary = re.search(r"(\d+) passed\b[^\n]* in [\d.]+s", proc.stdout)
    else:
        proc = _dev_test(fork, ["--no-lint", "-q", "--collect-only"], test_env, timeout=180)
        summary = re.search(r"(\d+) tests? collected", proc.stdout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert summary and int(summary.group(1)) >= 100, proc.stdout[-500:]  # the suite, not an empty selection

    # 4. it boots (seeding what remains) and serves what remains; without the authorization server,
    # the tokens of an IdP that publishes its keys on loopback
    idp = FakeIdp()
    with serving(lambda _: idp.app()) as idp_url:
        idp.base_url = idp_url
        trusted = {"APP_OAUTH_ISSUER": idp.base_url, "APP_OAUTH_JWKS_URL": idp.jwks_url,
                   "APP_OUTBOUND_ALLOWLIST": idp.host_port} if removal.authserver else {}
        server = LiveServer(existing_database, tmp_path / "fork.log", port=port, python=python,
                            cwd=fork, environ=env,
                            extra_env={"APP_SEED_ON_START": "true", **trusted}).start(timeout=60)
        try:
            listed = server.rpc("tools/list")["result"]["tools"]
            # The profile tool on both eras (an anonymous ChatGPT call: its linking challenge, as a
            # tool result).
            answers = [plain_call(server.mcp_url, "get_account_profile", version=version,
                                  meta=CHATGPT_META) for version in ("2025-06-18", "2026-07-28")]
            # The listing of what remains, checked and replayed, the linked cases with a token of
            # the IdP's (a fork's own features would have their cases beside them).
            listing = run(python, "-m", "app", "listing", "--url", server.mcp_url, cwd=fork,
                          env={**env, **trusted, "LISTING_TOKEN": idp.sign(server.mcp_url)}
                          ) if removal.authserver else None
        finally:
            server.stop()
    assert sorted(t["name"] for t in listed) == tools
    for answer in answers:
        assert answer.status_code == 200, answer.text
        result = answer.json()["result"]
        assert result["isError"] is True and "mcp/www_authenticate" in result["_meta"], result
    if listing is not None:
        assert listing.returncode == 0, listing.stdout + listing.stderr
        assert "1 of 1 test cases answered as expected" in listing.stdout.splitlines(), (
            listing.stdout)

