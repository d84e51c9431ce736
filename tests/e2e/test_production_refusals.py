"""Production start-up and the operator commands of ``python -m app``.

A production server refuses what would be unsafe to serve with (generated keys, the demo accounts with
their known password) in one line on stderr that names the variable to set, never a traceback; the
``users`` and ``clients`` commands report their outcome in one line too. The commands run in this process
(``main(argv)`` with exactly the environment given, tests/cli.py); two run as real subprocesses, so the
``python -m app`` entry point itself, its exit code and its stderr are checked end to end, and the servers
that start are real ones."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from joserfc.jwk import ECKey

from app.authserver.keys import generate_jwks
from app.db.migrate import upgrade
from app.main import discover_features
from tests.cli import Outcome, run_cli
from tests.conftest import count_rows, prepare
from tests.e2e.isolated import base_env
from tests.e2e.server import LiveServer, free_port

SECRET_KEY = "s" * 40
PASSWORD = "correct horse battery"


def _signing_keys() -> str:
    return json.dumps(generate_jwks())


def _production(database_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """A minimal production environment: nothing from the developer's shell leaks in."""
    return base_env(**{"APP_ENV": "production", "APP_DATABASE_URL": database_url, "APP_VAR_DIR": str(tmp_path / "var"),
                       "APP_LOG_FORMAT": "json", "APP_BASE_URL": "https://mcp.example.com", **extra})


@pytest.fixture
def app_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``python -m app ARGS`` in this process (tests/cli.py)."""
    def run(*args: str, env: dict[str, str], cwd: Path, stdin: str = "") -> Outcome:
        return run_cli(monkeypatch, capsys, *args, env=env, cwd=cwd, stdin=stdin)
    return run


@pytest.fixture
def serve(app_cli):
    def run(env: dict[str, str], cwd: Path) -> Outcome:
        return app_cli("serve", "--port", str(free_port()), env=env, cwd=cwd)
    return run


def _subprocess(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def _one_line(proc: Outcome | subprocess.CompletedProcess, code: int) -> str:
    """The refusal: exit ``code``, exactly one line on stderr, no traceback anywhere."""
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def _live(database_url: str, tmp_path: Path, env: dict[str, str], **extra: str) -> LiveServer:
    return LiveServer(database_url, tmp_path / "server.log", environ=env, cwd=tmp_path, extra_env=extra)


@pytest.fixture
def migrated(fresh_database: str) -> str:
    upgrade(fresh_database)
    return fresh_database


def test_production_without_signing_keys_refuses_naming_app_oauth_signing_keys(serve, database_url, tmp_path):
    line = _one_line(serve(_production(database_url, tmp_path, APP_SECRET_KEY=SECRET_KEY), tmp_path), 1)
    assert line.startswith("serve: APP_OAUTH_SIGNING_KEYS: APP_ENV=production needs the keys that sign access "
                           "tokens; "), line
    assert "APP_ALLOW_GENERATED_KEYS=true" in line


def test_production_with_signing_keys_but_no_secret_key_refuses_naming_app_secret_key(serve, database_url, tmp_path):
    env = _production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=_signing_keys())
    line = _one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_SECRET_KEY: APP_ENV=production needs it (it signs the sign-in forms "
                           "and the download links of APP_STORAGE_BACKEND=local); "), line


def test_production_with_local_files_but_no_secret_key_refuses_even_with_an_external_idp(serve, database_url,
                                                                                         tmp_path):
    # No form to sign in external mode, but local download links are signed with the same secret.
    env = _production(database_url, tmp_path, APP_AUTH_MODE="external", APP_OAUTH_ISSUER="https://idp.example/",
                      APP_OAUTH_JWKS_URL="https://idp.example/jwks.json")
    line = _one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_SECRET_KEY: APP_ENV=production needs it (it signs the download links of "
                           "APP_STORAGE_BACKEND=local); "), line


def test_production_with_nothing_set_names_every_missing_variable_at_once_and_writes_nothing(database_url,
                                                                                             tmp_path):
    env = _production(f"sqlite:///{tmp_path}/var/app.db", tmp_path)  # the database too would go under var/
    del env["APP_BASE_URL"]
    proc = _subprocess("serve", "--port", str(free_port()), env=env, cwd=tmp_path)  # the real entry point
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr
    assert [line.split(":")[1].strip() for line in proc.stderr.splitlines()] == [
        "APP_BASE_URL", "APP_OAUTH_SIGNING_KEYS", "APP_SECRET_KEY"], proc.stderr
    assert all(line.startswith("serve: APP_") for line in proc.stderr.splitlines())
    assert not (tmp_path / "var").exists()  # no key generated on the way to a refusal


def test_production_refuses_a_base_url_in_the_clear_off_loopback(serve, database_url, tmp_path):
    env = _production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=_signing_keys(), APP_SECRET_KEY=SECRET_KEY,
                      APP_BASE_URL="http://mcp.example.com")
    line = _one_line(serve(env, tmp_path), 1)
    assert line == ("serve: APP_BASE_URL: APP_ENV=production needs https (got 'http://mcp.example.com'): tokens and "
                    "sign-in forms never cross a network in the clear")


@pytest.mark.parametrize(("url", "said"), [
    ("garbage", "APP_DATABASE_URL: not a database URL: use sqlite:///"),
    ("mysql://app:hunter2@db/app", "APP_DATABASE_URL: mysql:// is not supported: use sqlite:///"),
    ("postgresql+asyncpg://app@db/app", "APP_DATABASE_URL: postgresql+asyncpg:// is not supported: use sqlite:///"),
])
def test_a_database_url_the_server_cannot_use_is_one_line_naming_the_variable(app_cli, tmp_path, url, said):
    proc = app_cli("migrate", env=base_env(APP_DATABASE_URL=url), cwd=tmp_path)
    line = _one_line(proc, 2)
    assert line.startswith(said), line
    assert "hunter2" not in proc.stderr  # the URL is not echoed: it may carry a password


def test_users_create_without_a_terminal_says_to_pipe_the_password_in_one_line(migrated, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "app", "users", "create", "erin"], cwd=tmp_path,
                          env=base_env(APP_DATABASE_URL=migrated), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert _one_line(proc, 2) == ("users: no terminal to ask for the password on: pipe it in with "
                                  "--password-stdin")
    assert count_rows(migrated, "accounts") == 0


def test_serve_on_another_port_advertises_that_port_when_no_base_url_is_set(database_url, tmp_path):
    port = free_port()
    env = base_env(APP_DATABASE_URL=database_url, APP_VAR_DIR=str(tmp_path / "var"),
                   APP_MIGRATE_ON_START="false", APP_SEED_ON_START="false")
    assert "APP_BASE_URL" not in env
    server = subprocess.Popen([sys.executable, "-m", "app", "serve", "--port", str(port)], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        metadata = None
        for _ in range(300):
            try:
                metadata = httpx.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp").json()
                break
            except httpx.HTTPError:
                time.sleep(0.1)  # polling a child process until it listens
    finally:
        server.terminate()
        server.wait(15)
    assert metadata is not None
    assert metadata["resource"] == f"http://127.0.0.1:{port}/mcp"
    assert metadata["authorization_servers"] == [f"http://127.0.0.1:{port}"]


def test_s3_storage_without_a_bucket_is_one_line_naming_the_variable(serve, database_url, tmp_path):
    env = _production(database_url, tmp_path, APP_STORAGE_BACKEND="s3")
    assert _one_line(serve(env, tmp_path), 2) == "APP_STORAGE_BACKEND=s3 needs APP_S3_BUCKET"


def test_production_refuses_a_database_that_holds_the_demo_accounts(serve, database_url, tmp_path):
    env = _production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=_signing_keys(), APP_SECRET_KEY=SECRET_KEY,
                      APP_MIGRATE_ON_START="false", APP_SEED_ON_START="false")
    line = _one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_ENV=production but demo accounts exist ("), line
    assert "alice" in line and "bob" in line and "APP_ALLOW_DEMO_ACCOUNTS=true" in line


def test_production_starts_once_the_demo_accounts_are_disabled_as_the_refusal_advises(serve, app_cli, fresh_database,
                                                                                     tmp_path):
    prepare(fresh_database)  # migrated and seeded in development: alice and bob exist
    env = _production(fresh_database, tmp_path, APP_OAUTH_SIGNING_KEYS=_signing_keys(), APP_SECRET_KEY=SECRET_KEY)
    assert app_cli("users", "disable", "alice", env=env, cwd=tmp_path).returncode == 0
    line = _one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_ENV=production but demo accounts exist (bob): "), line
    assert app_cli("users", "disable", "bob", env=env, cwd=tmp_path).returncode == 0
    server = _live(fresh_database, tmp_path, env).start()
    try:
        assert httpx.get(f"{server.base_url}/readyz").status_code == 200
    finally:
        server.stop()


def test_allow_generated_keys_lets_a_keyless_production_server_start(database_url, tmp_path):
    env = _production(database_url, tmp_path, APP_ALLOW_GENERATED_KEYS="true", APP_ALLOW_DEMO_ACCOUNTS="true")
    server = _live(database_url, tmp_path, env).start()
    try:
        published = httpx.get(f"{server.base_url}/jwks.json").json()
        # The host emulator and its log endpoint are development tools: production has neither.
        # Not mounted at all: Starlette's bare "Not Found" (the dev routes' own 404s are JSON), any method.
        dev = [(r.status_code, r.text) for r in (
            httpx.get(f"{server.base_url}/dev/host"),
            httpx.get(f"{server.base_url}/dev/logs", params={"widget_session_id": "a"}),
            httpx.post(f"{server.base_url}/dev/files", content=b"x"),
            httpx.get(f"{server.base_url}/dev/files/devfile_a"))]
    finally:
        server.stop()
    assert dev == [(404, "Not Found")] * 4
    generated = json.loads((tmp_path / "var" / "oauth-signing-keys.json").read_text())
    assert [k["kid"] for k in published["keys"]] == [k["kid"] for k in generated["keys"]]
    assert (tmp_path / "var" / "secret-key").is_file()


def test_a_production_server_seeds_a_fresh_database_without_the_demo_accounts(fresh_database, tmp_path):
    env = _production(fresh_database, tmp_path, APP_OAUTH_SIGNING_KEYS=_signing_keys(), APP_SECRET_KEY=SECRET_KEY)
    # LiveServer turns migrating and seeding off by default; a first production start does both.
    server = _live(fresh_database, tmp_path, env, APP_MIGRATE_ON_START="true", APP_SEED_ON_START="true").start()
    server.stop()
    assert count_rows(fresh_database, "accounts") == 0
    [done] = [json.loads(line) for line in server.log_lines() if '"seed.done"' in line]  # the seed step did run
    seeded = {f.name for f in discover_features() if f.seed is not None}
    assert sorted(step.split(":")[0] for step in done["steps"]) == sorted(seeded)  # each feature, no accounts


@pytest.mark.parametrize(("keys", "reason"), [
    ("not json at all", "not JSON"),
    (json.dumps({"keys": [ECKey.generate_key("P-256", private=True).as_dict(private=False)]}),
     "every key must be a private EC or RSA key"),
    (json.dumps({"keys": []}), "at least one private key"),
])
def test_unusable_signing_keys_are_refused_in_one_line_naming_app_oauth_signing_keys(serve, database_url, tmp_path,
                                                                                      keys, reason):
    env = _production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=keys, APP_SECRET_KEY=SECRET_KEY)
    line = _one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_OAUTH_SIGNING_KEYS: ") and reason in line, line


def test_external_mode_without_an_issuer_is_refused_in_one_line(serve, database_url, tmp_path):
    env = base_env(APP_DATABASE_URL=database_url, APP_AUTH_MODE="external",
                   APP_OAUTH_JWKS_URL="https://idp.example/jwks.json")
    line = _one_line(serve(env, tmp_path), 2)
    assert line == "APP_AUTH_MODE=external needs APP_OAUTH_ISSUER and APP_OAUTH_JWKS_URL"


def test_users_are_created_listed_and_disabled_from_the_command_line(app_cli, migrated, tmp_path):
    env = base_env(APP_DATABASE_URL=migrated)
    created = app_cli("users", "create", "carol", "--name", "Carol Danvers", "--email", "carol@example.com",
                   "--password-stdin", env=env, cwd=tmp_path, stdin=f"{PASSWORD}\n")
    assert created.returncode == 0 and created.stderr == "", created.stderr
    [line] = created.stdout.splitlines()
    assert line.startswith("created carol (acct_") and line.endswith(")"), line
    account_id = line.removeprefix("created carol (").removesuffix(")")

    listed = app_cli("users", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines() == [f"carol\t{account_id}\tactive\tcarol@example.com"]

    disabled = app_cli("users", "disable", "carol", env=env, cwd=tmp_path)
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout.strip() == f"disabled carol ({account_id}); its tokens stop working now"
    listed = app_cli("users", "list", env=env, cwd=tmp_path)
    assert listed.stdout.splitlines() == [f"carol\t{account_id}\tdisabled\tcarol@example.com"]


def test_a_short_password_is_refused_in_one_line_and_creates_no_account(app_cli, migrated, tmp_path):
    env = base_env(APP_DATABASE_URL=migrated)
    refused = app_cli("users", "create", "dave", "--password-stdin", env=env, cwd=tmp_path, stdin="short\n")
    assert _one_line(refused, 1) == "users: password: at least 8 characters"
    assert refused.stdout == ""
    assert count_rows(migrated, "accounts") == 0


def test_a_client_with_an_http_redirect_uri_off_loopback_is_refused_in_one_line(app_cli, migrated, tmp_path):
    env = base_env(APP_DATABASE_URL=migrated)
    refused = app_cli("clients", "create", "--name", "Partner", "--redirect-uri", "http://partner.example/callback",
                   env=env, cwd=tmp_path)
    line = _one_line(refused, 2)
    assert line.startswith("clients: redirect_uris: 'http://partner.example/callback' "), line
    assert refused.stdout == ""
    assert count_rows(migrated, "oauth_clients") == 0
