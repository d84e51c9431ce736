"""What decides that a test runs on PostgreSQL too (CI's second leg) is the ``database`` mark, added from
the fixtures a test uses (tests/conftest.py). A fixture that makes a database with ``empty_database`` and is
missing from that list, or a test that calls it without the mark, would leave the PostgreSQL leg unseen."""

from __future__ import annotations

import ast

from tests.conftest import DATABASE_FIXTURES, ROOT
from tests.demos import suite_modules


def _calls_empty_database(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "empty_database"
               for node in ast.walk(function))


def _decorated(function: ast.FunctionDef, name: str) -> bool:
    return any(name in ast.unparse(decorator) for decorator in function.decorator_list)


def test_every_maker_of_a_database_is_known_to_the_database_mark():
    sources = [*suite_modules(ROOT), *(ROOT / "tests").glob("*.py"), *(ROOT / "tests").glob("*/conftest.py")]
    unmarked = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not _calls_empty_database(node):
                continue
            if _decorated(node, "fixture") and node.name not in DATABASE_FIXTURES:
                unmarked.append(f"{path.relative_to(ROOT)}: fixture {node.name}")
            elif node.name.startswith("test_") and not _decorated(node, "mark.database"):
                unmarked.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert unmarked == []
