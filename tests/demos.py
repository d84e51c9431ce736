"""Which test modules belong to the deletable parts (the demo features, the built-in authorization server, the
speed-up package), read from their source (no import).

A module that needs a demo says so once, at module level: ``pytestmark = pytest.mark.demo("zoo")`` (or a
list holding that mark; ``pytest.mark.demo(*DEMOS)`` for a module that needs all of them); one that needs the
built-in authorization server (``app/authserver``), ``pytest.mark.authserver``; one that tests the speed-up
package (``app/tuning``), ``pytest.mark.tuning``. Removing a demo deletes ``app/features/<name>`` and every
module marked with it; removing the authorization server or the speed-up package deletes its folder and the
modules marked with its name. The modules marked with none are the core suite, which a fork keeps whatever it
deletes (tests/e2e/test_fork.py proves it by deleting all of them).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

DEMOS = ("cafes", "files", "recipes", "search", "zoo")
AUTHSERVER = "authserver"
TUNING = "tuning"
PACKAGES = (AUTHSERVER, TUNING)  # the parts of app/ beside the features that a fork may delete
PARTS = (*DEMOS, *PACKAGES)  # what a fork may delete
TEST_LAYERS = ("unit", "integration", "e2e", "browser")
# A tree without the built-in authorization server serves an IdP's tokens (APP_AUTH_MODE=external): its core
# suite runs so. The IdP is never asked: a test that presents tokens brings its own verifier, and a token the
# server itself would check finds no such host.
EXTERNAL_IDP = {"APP_AUTH_MODE": "external", "APP_OAUTH_ISSUER": "https://idp.invalid/",
                "APP_OAUTH_JWKS_URL": "https://idp.invalid/jwks.json"}


def feature_names(root: Path) -> tuple[str, ...]:
    """What ``pytest.mark.demo`` may name: the demos, and every feature package this tree has (a forker's own
    ``weather``, marked so that it goes with its folder as a demo does)."""
    features = root / "app" / "features"
    present = {path.name for path in features.iterdir() if (path / "__init__.py").is_file()} if features.is_dir() \
        else set()
    return tuple(sorted(set(DEMOS) | present))


def authserver_installed() -> bool:
    # Its __init__.py, not the folder: ``git rm -r`` leaves __pycache__ behind, which Python takes for a package.
    spec = importlib.util.find_spec("app.authserver")
    return spec is not None and spec.origin is not None


def tuning_installed() -> bool:
    """Whether this tree has the speed-up package (its __init__.py, as for the authorization server)."""
    spec = importlib.util.find_spec("app.tuning")
    return spec is not None and spec.origin is not None


def tree_auth_env() -> dict[str, str]:
    """The authorization settings this tree's suite runs with: none (the built-in server) or EXTERNAL_IDP."""
    return {} if authserver_installed() else dict(EXTERNAL_IDP)


def _is_demo_mark(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    mark = func.value if isinstance(func, ast.Attribute) and func.attr == "demo" else None
    return (isinstance(mark, ast.Attribute) and mark.attr == "mark" and isinstance(mark.value, ast.Name)
            and mark.value.id == "pytest")


def _package_mark(node: ast.AST) -> str | None:
    """``authserver`` or ``tuning`` for ``pytest.mark.authserver`` / ``pytest.mark.tuning``, else None."""
    mark = node.value if isinstance(node, ast.Attribute) and node.attr in PACKAGES else None
    if (isinstance(mark, ast.Attribute) and mark.attr == "mark" and isinstance(mark.value, ast.Name)
            and mark.value.id == "pytest"):
        return node.attr  # type: ignore[union-attr]
    return None


def marked_demos(source: str) -> frozenset[str]:
    """The parts a module's ``pytestmark`` names: demos, ``authserver``, ``tuning`` (empty for a core module)."""
    names: set[str] = set()
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                     for t in statement.targets):
            for node in ast.walk(statement.value):
                if (package := _package_mark(node)) is not None:
                    names.add(package)
                if _is_demo_mark(node):
                    for arg in node.args:  # "zoo", or *DEMOS (from this module) for every demo
                        if isinstance(arg, ast.Constant):
                            names.add(arg.value)
                        elif isinstance(arg, ast.Starred) and getattr(arg.value, "id", None) == "DEMOS":
                            names |= set(DEMOS)
    return frozenset(names)


def imported_demos(source: str) -> frozenset[str]:
    """The parts a module imports code from (``app.features.<demo>``, ``app.authserver``, ``app.tuning``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                   # from app.features import zoo: each imported name may be a feature package
                   else [f"{node.module}.{alias.name}" for alias in node.names] if isinstance(node, ast.ImportFrom)
                   else [])
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["app", "features"] and len(parts) > 2 and parts[2] in DEMOS:
                names.add(parts[2])
            elif len(parts) > 1 and parts[0] == "app" and parts[1] in PACKAGES:
                names.add(parts[1])
    return frozenset(names)


def suite_modules(root: Path) -> list[Path]:
    return sorted(p for layer in TEST_LAYERS for p in (root / "tests" / layer).glob("test_*.py"))


def demo_test_modules(root: Path, demos: tuple[str, ...] = DEMOS) -> list[Path]:
    """The test modules that go with these parts (demos, ``authserver``): every module marked with one of them."""
    return [p for p in suite_modules(root) if marked_demos(p.read_text(encoding="utf-8")) & set(demos)]
