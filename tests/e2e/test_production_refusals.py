"""Production start-up and the core commands of ``python -m app``: a production server refuses what would be
unsafe to serve with in one line on stderr that names the variable to set, never a traceback. The commands run
in this process (``main(argv)`` with exactly the environment given, tests/cli.py); one runs as a real
subprocess, so the ``python -m app`` entry point itself, its exit code and its stderr are checked end to end.
What the built-in authorization server adds (signing keys, demo accounts, ``users``, ``clients``):
test_authserver_operations.py."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest

from tests.demos import EXTERNAL_IDP, authserver_installed
from tests.e2e.isolated import base_env
from tests.e2e.operator import SECRET_KEY, app_subprocess, one_line, production
from tests.e2e.server import free_port


def test_production_with_local_files_but_no_secret_key_refuses_even_with_an_external_idp(serve, database_url,
                                                                                         tmp_path):
    # No form to sign in external mode, but local download links are signed with the same secret.
    env = production(database_url, tmp_path, APP_AUTH_MODE="external", APP_OAUTH_ISSUER="https://idp.example/",
                      APP_OAUTH_JWKS_URL="https://idp.example/jwks.json")
    line = one_line(serve(env, tmp_path), 1)
    assert line.startswith("serve: APP_SECRET_KEY: APP_ENV=production needs it (it signs the download links of "
                           "APP_STORAGE_BACKEND=local); "), line


def test_production_with_nothing_set_names_every_missing_variable_at_once_and_writes_nothing(database_url,
                                                                                             tmp_path):
    env = production(f"sqlite:///{tmp_path}/var/app.db", tmp_path)  # the database too would go under var/
    del env["APP_BASE_URL"], env["APP_REQUEST_STATE_KEYS"]
    proc = app_subprocess("serve", "--port", str(free_port()), env=env, cwd=tmp_path)  # the real entry point
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr
    # The authorization server's signing keys when this tree has it (a fork with an external IdP signs none).
    signing = ["APP_OAUTH_SIGNING_KEYS"] if authserver_installed() else []
    assert [line.split(":")[1].strip() for line in proc.stderr.splitlines()] == [
        "APP_BASE_URL", *signing, "APP_SECRET_KEY", "APP_REQUEST_STATE_KEYS"], proc.stderr
    assert all(line.startswith("serve: APP_") for line in proc.stderr.splitlines())
    assert not (tmp_path / "var").exists()  # no key generated on the way to a refusal


def test_production_without_request_state_keys_refuses_naming_them(serve, database_url, tmp_path):
    env = production(
        database_url,
        tmp_path,
        APP_SECRET_KEY=SECRET_KEY,
        APP_AUTH_MODE="external",
        APP_OAUTH_ISSUER="https://idp.example/",
        APP_OAUTH_JWKS_URL="https://idp.example/jwks.json",
    )
    del env["APP_REQUEST_STATE_KEYS"]
    line = one_line(serve(env, tmp_path), 1)
    assert line.startswith(
        "serve: APP_REQUEST_STATE_KEYS: APP_ENV=production needs it (it seals the state of a "
        "request that asks the user for input, which another replica may complete); "
    ), line


def test_a_request_state_key_too_short_is_one_line_that_does_not_repeat_it(
    serve, database_url, tmp_path
):
    env = production(database_url, tmp_path, APP_SECRET_KEY=SECRET_KEY,
                     APP_REQUEST_STATE_KEYS=f"{'k' * 40},short-secret-value")
    line = one_line(serve(env, tmp_path), 2)
    assert (
        line == "APP_REQUEST_STATE_KEYS: every key needs 32 or more characters (key 2 is shorter)"
    ), line
    assert "short-secret-value" not in line


def test_production_refuses_a_base_url_in_the_clear_off_loopback(serve, database_url, tmp_path):
    env = production(database_url, tmp_path, APP_SECRET_KEY=SECRET_KEY, APP_ALLOW_GENERATED_KEYS="true",
                    APP_BASE_URL="http://mcp.example.com")
    line = one_line(serve(env, tmp_path), 1)
    assert line == ("serve: APP_BASE_URL: APP_ENV=production needs https (got 'http://mcp.example.com'): tokens and "
                    "sign-in forms never cross a network in the clear")


@pytest.mark.parametrize(("url", "said"), [
    ("garbage", "APP_DATABASE_URL: not a database URL: use sqlite:///"),
    ("mysql://app:hunter2@db/app", "APP_DATABASE_URL: mysql:// is not supported: use sqlite:///"),
    ("postgresql+asyncpg://app@db/app", "APP_DATABASE_URL: postgresql+asyncpg:// is not supported: use sqlite:///"),
])
def test_a_database_url_the_server_cannot_use_is_one_line_naming_the_variable(app_cli, tmp_path, url, said):
    proc = app_cli("migrate", env=base_env(APP_DATABASE_URL=url), cwd=tmp_path)
    line = one_line(proc, 2)
    assert line.startswith(said), line
    assert "hunter2" not in proc.stderr  # the URL is not echoed: it may carry a password


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
    # The issuer: this server (built-in authorization server), or the external IdP of a fork without it.
    issuer = f"http://127.0.0.1:{port}" if authserver_installed() else EXTERNAL_IDP["APP_OAUTH_ISSUER"]
    assert metadata["authorization_servers"] == [issuer]


def test_s3_storage_without_a_bucket_is_one_line_naming_the_variable(serve, database_url, tmp_path):
    env = production(database_url, tmp_path, APP_STORAGE_BACKEND="s3")
    assert one_line(serve(env, tmp_path), 2) == "APP_STORAGE_BACKEND=s3 needs APP_S3_BUCKET"


def test_external_mode_without_an_issuer_is_refused_in_one_line(serve, database_url, tmp_path):
    env = base_env(APP_DATABASE_URL=database_url, APP_AUTH_MODE="external",
                   APP_OAUTH_JWKS_URL="https://idp.example/jwks.json")
    env.pop("APP_OAUTH_ISSUER", None)  # a fork's suite runs with an IdP of its own (tests/demos.py)
    line = one_line(serve(env, tmp_path), 2)
    assert line == "APP_AUTH_MODE=external needs APP_OAUTH_ISSUER and APP_OAUTH_JWKS_URL"
