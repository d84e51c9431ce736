"""Which test modules belong to the demo features, read from their source (no import).

A module that needs a demo says so once, at module level: ``pytestmark = pytest.mark.demo("zoo")`` (or a
list holding that mark; ``pytest.mark.demo(*DEMOS)`` for a module that needs all of them). Removing a
demo deletes ``app/features/<name>`` and every module marked with it;
the modules marked with none are the core suite, which a fork keeps whatever it deletes
(tests/e2e/test_fork.py proves it by deleting all of them).
"""

from __future__ import annotations

import ast
from pathlib import Path

DEMOS = ("cafes", "files", "recipes", "search", "zoo")
TEST_LAYERS = ("unit", "integration", "e2e", "browser")


def _is_demo_mark(node: ast.AST) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    mark = func.value if isinstance(func, ast.Attribute) and func.attr == "demo" else None
    return (isinstance(mark, ast.Attribute) and mark.attr == "mark" and isinstance(mark.value, ast.Name)
            and mark.value.id == "pytest")


def marked_demos(source: str) -> frozenset[str]:
    """The demos a module's ``pytestmark`` names (empty for a core module)."""
    names: set[str] = set()
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                     for t in statement.targets):
            for node in ast.walk(statement.value):
                if _is_demo_mark(node):
                    for arg in node.args:  # "zoo", or *DEMOS (from this module) for every demo
                        if isinstance(arg, ast.Constant):
                            names.add(arg.value)
                        elif isinstance(arg, ast.Starred) and getattr(arg.value, "id", None) == "DEMOS":
                            names |= set(DEMOS)
    return frozenset(names)


def imported_demos(source: str) -> frozenset[str]:
    """The demos a module imports code from (``app.features.<demo>``)."""
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
    return frozenset(names)


def suite_modules(root: Path) -> list[Path]:
    return sorted(p for layer in TEST_LAYERS for p in (root / "tests" / layer).glob("test_*.py"))


def demo_test_modules(root: Path, demos: tuple[str, ...] = DEMOS) -> list[Path]:
    """The test modules that go with these demos: every module marked with one of them."""
    return [p for p in suite_modules(root) if marked_demos(p.read_text(encoding="utf-8")) & set(demos)]
