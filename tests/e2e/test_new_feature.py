"""``python -m app new-feature weather`` in a clone (a copy of the repository with its own editable
install): what it writes passes ruff, pyright and ``check`` with one more tool, its own tests pass
as written, and the server booted from the clone lists the tool and answers it. Its names and
files in detail: tests/unit/test_scaffold.py."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.conftest import ROOT
from tests.demos import authserver_installed
from tests.e2e.fake_idp import FakeIdp
from tests.e2e.isolated import base_env, copy_repository, fresh_venv, pip_install, run
from tests.e2e.server import LiveServer
from tests.forking_doc import DEMO_SECTION, deletions, for_demo
from tests.serving import serving

# The clone's server stands on this run's database, whichever: CI runs this on SQLite only.
pytestmark = pytest.mark.any_database


def _free_name() -> str:
    """weather, unless this tree has one already (a forker who ran the command): weather_2..."""
    names = ("weather", *(f"weather_{n}" for n in range(2, 100)))
    return next(name for name in names if not (ROOT / "app" / "features" / name).exists()
                and not (ROOT / "tests" / "unit" / f"test_{name}.py").exists())


def test_a_new_feature_passes_the_checks_and_its_tests_as_written_and_is_served(
        tmp_path, database_url, live_server: LiveServer):
    before = live_server.rpc("tools/list")["result"]["tools"]
    resources = len(live_server.rpc("resources/list")["result"]["resources"])
    clone = copy_repository(tmp_path / "clone")
    python = fresh_venv(clone / ".venv")  # where the clone's pyright settings look for it
    pip_install(python, "-e", str(clone))
    env = base_env()
    idp = FakeIdp()
    name = _free_name()
    tool = f"{name}_hello"
    written = [f"app/features/{name}/{module}.py"
               for module in ("__init__", "tool", "service", "schemas")]
    written += [f"app/features/{name}/listing.toml", f"tests/unit/test_{name}.py",
                f"tests/e2e/test_{name}_over_http.py"]

    proc = run(python, "-m", "app", "new-feature", name, cwd=clone, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[:-1] == [f"wrote {path}" for path in written]
    assert all((clone / path).is_file() and not (ROOT / path).exists() for path in written)
    again = run(python, "-m", "app", "new-feature", name, cwd=clone, env=env)
    assert (again.returncode, again.stderr) == (
        2, f"new-feature: app/features/{name} exists already: choose another name\n")

    # What ./dev test checks first: the lint, the types of app/, the descriptors on the wire.
    proc = run(python, "-m", "ruff", "check", "app", "tests", cwd=clone, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run(python, "-m", "pyright", f"app/features/{name}", cwd=clone, timeout=300,
               env={**env, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"})
    assert proc.returncode == 0 and re.search(r"^0 errors", proc.stdout, re.M), proc.stdout
    proc = run(python, "-m", "app", "check", cwd=clone, env=env)
    expected = f"ok: {len(before) + 1} tools, {resources} resources\n"  # one more tool
    assert (proc.returncode, proc.stdout) == (0, expected), proc.stdout + proc.stderr

    # Its own tests, as written: the service's, and the tool's over HTTP on a server of their own.
    proc = run(python, "-m", "pytest", "-q", "-p", "no:xdist", *written[5:], cwd=clone, env=env,
               timeout=300)
    assert proc.returncode == 0 and re.search(r"\b4 passed\b", proc.stdout), proc.stdout[-3000:]

    server = LiveServer(database_url, tmp_path / "clone.log", python=python, cwd=clone,
                        environ=env).start(timeout=60)
    try:
        tools = {listed["name"]: listed for listed in server.rpc("tools/list")["result"]["tools"]}
        answer = server.rpc("tools/call", {"name": tool, "arguments": {"who": "Ada"}})
    finally:
        server.stop()
    assert set(tools) - {listed["name"] for listed in before} == {tool}
    assert tools[tool]["annotations"]["readOnlyHint"] is True
    assert tools[tool]["securitySchemes"] == [{"type": "noauth"}]
    assert answer["result"]["structuredContent"] == {"who": "Ada", "text": "Hello, Ada!"}

    # Its listing entry, checked and replayed with the others' on a server the command serves
    # itself (a database of its own: the demos' cases write). Without the built-in authorization
    # server (the fork's own run of this test), the linked cases carry an IdP's token.
    with serving(lambda _: idp.app()) as idp_url:
        idp.base_url = idp_url
        linking = {} if authserver_installed() else {
            "APP_OAUTH_ISSUER": idp.base_url, "APP_OAUTH_JWKS_URL": idp.jwks_url,
            "APP_OUTBOUND_ALLOWLIST": idp.host_port, "APP_OAUTH_AUDIENCE": "api://listing",
            "LISTING_TOKEN": idp.sign("api://listing")}
        proc = run(python, "-m", "app", "listing", cwd=clone, timeout=180,
                   env={**env, **linking,
                        "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'listing.db'}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"  ok    app/features/{name}/listing.toml, case 1: {tool} {{\"who\": \"Ada\"}}" in (
        proc.stdout), proc.stdout

    # And it goes as docs/forking.md removes a demo: its folder and both its test modules.
    author = ["-c", "user.name=fork", "-c", "user.email=fork@example.invalid"]
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", *author, "commit", "-q", "-m", "fork"]):
        subprocess.run(command, cwd=clone, env=env, check=True, capture_output=True, timeout=120)
    script = for_demo(deletions(clone, DEMO_SECTION), name)
    proc = subprocess.run(["bash", "-e", "-c", script], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [path for path in written if (clone / path).exists()] == []
