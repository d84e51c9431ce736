"""The built-in authorization server as an operator runs it: production refuses generated signing keys and the
demo accounts (known password) in one line naming what to set or do; ``users`` and ``clients`` report their
outcome in one line. One command runs as a real subprocess (no terminal); the servers that start are real."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest
from joserfc.jwk import ECKey

from app.authserver.keys import generate_jwks
from app.main import discover_features
from tests.conftest import count_rows, prepare
from tests.e2e.isolated import base_env
from tests.e2e.operator import SECRET_KEY, live, one_line, production

pytestmark = pytest.mark.authserver
PASSWORD = "correct horse battery"


def signing_keys() -> str:
    return json.dumps(generate_jwks())


def test_production_without_signing_keys_refuses_naming_app_oauth_signing_keys(serve, database_url, tmp_path):
    line = one_line(serve(production(database_url, tmp_path, APP_SECRET_KEY=SECRET_KEY), tmp_path), 1)
    assert line.startswith("serve: APP_OAUTH_SIGNING_KEYS: APP_ENV=production needs the keys that sign access "
                           "tokens; "), line
    assert "APP_ALLOW_GENERATED_KEYS=true" in line


def test_production_with_signing_keys_but_no_secret_key_refuses_naming_app_secret_key(serve, database_url, tmp_path):
    env = production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=signing_keys())
    line = one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_SECRET_KEY: APP_ENV=production needs it (it signs the sign-in forms "
                           "and the download links of APP_STORAGE_BACKEND=local); "), line


def test_users_create_without_a_terminal_says_to_pipe_the_password_in_one_line(migrated, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "app", "users", "create", "erin"], cwd=tmp_path,
                          env=base_env(APP_DATABASE_URL=migrated), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)
    assert one_line(proc, 2) == ("users: no terminal to ask for the password on: pipe it in with "
                                  "--password-stdin")
    assert count_rows(migrated, "accounts") == 0


def test_production_refuses_a_database_that_holds_the_demo_accounts(serve, database_url, tmp_path):
    env = production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=signing_keys(), APP_SECRET_KEY=SECRET_KEY,
                      APP_MIGRATE_ON_START="false", APP_SEED_ON_START="false")
    line = one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_ENV=production but demo accounts exist ("), line
    assert "alice" in line and "bob" in line and "APP_ALLOW_DEMO_ACCOUNTS=true" in line


def test_production_starts_once_the_demo_accounts_are_disabled_as_the_refusal_advises(serve, app_cli, fresh_database,
                                                                                     tmp_path):
    prepare(fresh_database)  # migrated and seeded in development: alice and bob exist
    env = production(fresh_database, tmp_path, APP_OAUTH_SIGNING_KEYS=signing_keys(), APP_SECRET_KEY=SECRET_KEY)
    assert app_cli("users", "disable", "alice", env=env, cwd=tmp_path).returncode == 0
    line = one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_ENV=production but demo accounts exist (bob): "), line
    assert app_cli("users", "disable", "bob", env=env, cwd=tmp_path).returncode == 0
    server = live(fresh_database, tmp_path, env).start()
    try:
        assert httpx.get(f"{server.base_url}/readyz").status_code == 200
    finally:
        server.stop()


def test_allow_generated_keys_lets_a_keyless_production_server_start(database_url, tmp_path):
    env = production(database_url, tmp_path, APP_ALLOW_GENERATED_KEYS="true", APP_ALLOW_DEMO_ACCOUNTS="true")
    server = live(database_url, tmp_path, env).start()
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
    env = production(fresh_database, tmp_path, APP_OAUTH_SIGNING_KEYS=signing_keys(), APP_SECRET_KEY=SECRET_KEY)
    # LiveServer turns migrating and seeding off by default; a first production start does both.
    server = live(fresh_database, tmp_path, env, APP_MIGRATE_ON_START="true", APP_SEED_ON_START="true").start()
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
    env = production(database_url, tmp_path, APP_OAUTH_SIGNING_KEYS=keys, APP_SECRET_KEY=SECRET_KEY)
    line = one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_OAUTH_SIGNING_KEYS: ") and reason in line, line


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
    assert disabled.stdout.strip() == (f"disabled carol ({account_id}); its tokens stop working within 5 s on every "
                                      "server (APP_OAUTH_GRANT_CACHE_TTL), for good")
    listed = app_cli("users", "list", env=env, cwd=tmp_path)
    assert listed.stdout.splitlines() == [f"carol\t{account_id}\tdisabled\tcarol@example.com"]


def test_a_short_password_is_refused_in_one_line_and_creates_no_account(app_cli, migrated, tmp_path):
    env = base_env(APP_DATABASE_URL=migrated)
    refused = app_cli("users", "create", "dave", "--password-stdin", env=env, cwd=tmp_path, stdin="short\n")
    assert one_line(refused, 1) == "users: password: at least 8 characters"
    assert refused.stdout == ""
    assert count_rows(migrated, "accounts") == 0


def test_a_client_with_an_http_redirect_uri_off_loopback_is_refused_in_one_line(app_cli, migrated, tmp_path):
    env = base_env(APP_DATABASE_URL=migrated)
    refused = app_cli("clients", "create", "--name", "Partner", "--redirect-uri", "http://partner.example/callback",
                   env=env, cwd=tmp_path)
    line = one_line(refused, 2)
    assert line.startswith("clients: redirect_uris: 'http://partner.example/callback' "), line
    assert refused.stdout == ""
    assert count_rows(migrated, "oauth_clients") == 0


def test_an_operator_deletes_an_account_on_request_with_what_was_kept_for_it(app_cli, migrated,
                                                                             tmp_path):
    env = base_env(APP_DATABASE_URL=migrated)
    created = app_cli("users", "create", "erin", "--password-stdin", env=env, cwd=tmp_path,
                      stdin=f"{PASSWORD}\n")
    account_id = created.stdout.strip().removeprefix("created erin (").removesuffix(")")
    unsure = app_cli("users", "delete", "erin", env=env, cwd=tmp_path)
    assert unsure.returncode == 2 and unsure.stderr.strip().endswith(
        "users delete deletes the account and everything the app keeps for it, for good: add "
        "--yes"), unsure.stderr

    deleted = app_cli("users", "delete", "erin", "--yes", env=env, cwd=tmp_path)
    assert (deleted.returncode, deleted.stderr) == (0, ""), deleted.stderr
    assert deleted.stdout.strip() == (f"deleted erin ({account_id}) with 0 items kept for it; its "
                                      "tokens stop working within APP_OAUTH_GRANT_CACHE_TTL")
    listed = app_cli("users", "list", env=env, cwd=tmp_path)
    assert listed.stdout.splitlines() == [f"deleted-{account_id}\t{account_id}\tdisabled\t"]
    again = app_cli("users", "delete", "erin", "--yes", env=env, cwd=tmp_path)
    assert one_line(again, 1) == "users: no account named 'erin'"
