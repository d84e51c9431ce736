"""The routes the app serves, read from its route table, for the tests of what the deployment
fronts route (tests/unit/test_deploy.py: the Kubernetes Ingress; tests/e2e/test_front.py: the
one-machine stack's Caddy)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.demos import authserver_installed, tree_auth_env

# What the app serves that no one outside the machine may reach: probes, the scrape, the
# development pages (which production does not serve). Every other route is public and must be
# routed.
INTERNAL_PATHS = ("/metrics", "/metrics/", "/healthz", "/readyz", "/livez")
INTERNAL_PREFIXES = ("/dev/",)


def upstream_provider() -> dict[str, str]:
    """The setting that gives the authorization server an upstream provider (whose sign-in routes
    exist only then), while it is installed."""
    if not authserver_installed():
        return {}
    return {"APP_OIDC_PROVIDERS": json.dumps([{
        "id": "corp", "name": "Corp", "issuer": "https://login.corp.example", "client_id": "c",
        "client_secret": "s"}])}


def served_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every route the app serves with every part on (the authorization server with an upstream
    provider, local storage's downloads), each as a path a request would carry."""
    from app.main import create_app
    from app.settings import load_settings

    env = {"APP_DATABASE_URL": f"sqlite:///{tmp_path / 'routes.db'}", "APP_VAR_DIR": str(tmp_path),
           "APP_STORAGE_BACKEND": "local", "APP_STORAGE_DIR": str(tmp_path / "files"),
           "APP_FILES_DIR": str(tmp_path / "files"), **tree_auth_env(), **upstream_provider()}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    app: Any = create_app(load_settings())
    while not hasattr(app, "routes"):  # inside the app's own middleware: the Starlette app
        app = app.app
    paths = [route.path for route in app.routes]
    # A parameter as a request fills it: "/files/blob/{sha:path}" -> "/files/blob/p/p".
    return sorted({re.sub(r"\{[^}:]+:path\}", "p/p", re.sub(r"\{[^}:]+\}", "p", p)) for p in paths})
