"""Operator commands fail with one line and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy import create_engine, inspect

from app.__main__ import main
from tests.conftest import ROOT
from tests.demos import tree_auth_env


@pytest.mark.parametrize(("argv", "needle"), [
    (["migrate", "--revision", "nope"], "Can't locate revision identified by 'nope'"),
    (["migrate", "--downgrade", "bogus"], "Can't locate revision identified by 'bogus'"),
])
def test_a_bad_migration_target_is_one_line(monkeypatch, capsys, fresh_database, argv, needle):
    monkeypatch.setenv("APP_DATABASE_URL", fresh_database)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{argv[0]}: ") and needle in err[0], err


@pytest.mark.parametrize("url", ["postgresql+psycopg://admin:s3cret@127.0.0.1:1/app",
                                 "postgresql+psycopg://admin@127.0.0.1:1/app?password=s3cret"],
                         ids=["before the host", "in the query"])
def test_an_unreachable_database_is_one_line_naming_where_without_credentials(monkeypatch, capsys, url):
    monkeypatch.setenv("APP_DATABASE_URL", url)
    assert main(["migrate"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("migrate: cannot reach the database at 127.0.0.1:1/app: "), err
    assert "s3cret" not in err[0]


def test_seeding_an_unmigrated_database_says_to_migrate_and_nothing_else(fresh_database, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "app", "seed"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "APP_DATABASE_URL": fresh_database}, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.strip() == ("seed: The server's database schema is not up to date; an operator "
                                   "must run `python -m app migrate`.")


def test_a_features_command_is_reached_by_its_name_and_a_wrong_one_is_one_line(monkeypatch, capsys, tmp_path,
                                                                              fresh_database):
    from tests.cli import run_cli

    env = {"APP_DATABASE_URL": fresh_database}
    nothing = run_cli(monkeypatch, capsys, "no-such-feature", "go", env=env, cwd=tmp_path)
    assert (nothing.returncode, nothing.stdout) == (1, "")
    assert nothing.stderr == "no-such-feature go: no feature named 'no-such-feature' is installed\n"
    unknown = run_cli(monkeypatch, capsys, "account", "go", env=env, cwd=tmp_path)  # core: no command of its own
    assert unknown.stderr == "account go: feature 'account' has no command 'go' (it has: none)\n"
    short = run_cli(monkeypatch, capsys, "account", env=env, cwd=tmp_path)
    assert short.returncode == 2 and short.stderr.startswith("usage: python -m app FEATURE COMMAND")
    helped = run_cli(monkeypatch, capsys, "--help", env=env, cwd=tmp_path)
    assert helped.returncode == 0 and "FEATURE COMMAND" in helped.stdout


def test_a_bad_setting_of_a_part_stops_a_migration_before_it_writes(monkeypatch, capsys, tmp_path, fresh_database):
    from tests.cli import run_cli

    # A feature's own setting (app/features/files/settings.py), or the core's when the tree has no files feature.
    files = (ROOT / "app" / "features" / "files" / "settings.py").is_file()
    name, value = ("APP_FILES_MAX_BYTES", "1") if files else ("APP_CACHE_TTL", "-1")
    done = run_cli(monkeypatch, capsys, "migrate", env={"APP_DATABASE_URL": fresh_database, name: value},
                   cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"{name}: ") and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "alembic_version" not in inspect(create_engine(fresh_database)).get_table_names()


def test_a_var_dir_that_cannot_hold_the_generated_secret_is_one_line_naming_it(monkeypatch, capsys, tmp_path,
                                                                              fresh_database):
    from tests.cli import run_cli

    (tmp_path / "var").write_text("a file, not a folder")
    done = run_cli(monkeypatch, capsys, "check", env={"APP_DATABASE_URL": fresh_database, **tree_auth_env(),
                                                      "APP_VAR_DIR": str(tmp_path / "var" / "sub")}, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("check: APP_VAR_DIR: cannot keep "), line


@pytest.mark.parametrize(("argv", "line"), [
    (("--port", "99999"), "serve: --port 99999: a port is a number from 1 to 65535"),
    (("--port", "http"), "serve: --port http: a port is a number from 1 to 65535"),
    (("--port", "-1"), "serve: --port -1: a port is a number from 1 to 65535"),
    (("--port", "0"), "serve: --port 0: the server publishes its address before it listens, so it "
                      "cannot take any free port: choose one from 1 to 65535"),
    (("--workers", "0"), "serve: --workers 0: a number of worker processes, 1 or more"),
])
def test_a_port_or_worker_count_serve_cannot_use_is_one_line_before_anything_else(
    monkeypatch, capsys, tmp_path, argv, line
):
    from tests.cli import run_cli

    # Before the settings: a database that does not exist is not even looked at.
    done = run_cli(monkeypatch, capsys, "serve", *argv, cwd=tmp_path,
                   env={"APP_DATABASE_URL": f"sqlite:///{tmp_path / 'never' / 'made.db'}"})
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line + "\n")


def test_a_port_in_use_is_one_line_before_anything_is_migrated(monkeypatch, capsys, tmp_path):
    import socket

    from tests.cli import run_cli

    database = tmp_path / "db.sqlite"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(monkeypatch, capsys, "serve", "--port", str(port), cwd=tmp_path,
                       env={"APP_DATABASE_URL": f"sqlite:///{database}", **tree_auth_env()})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"serve: 127.0.0.1:{port} is in use (is another server listening "
                           "there?); nothing was started\n")
    assert not database.exists()  # nothing migrated, nothing seeded
