"""Feature discovery: every sub-package of ``app.features`` is one feature.

A feature folder holds its tool(s) (``tool.py`` with ``register(registry)``),
service, repository, schemas, models and, optionally, its own alembic
``migrations/`` folder. Adding a tool means adding a folder; nothing else
in the app needs to change.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

_HERE = Path(__file__).parent


def feature_names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(_HERE)]) if m.ispkg and not m.name.startswith("_"))


def tool_modules() -> list[ModuleType]:
    modules = []
    for name in feature_names():
        try:
            modules.append(importlib.import_module(f"app.features.{name}.tool"))
        except ModuleNotFoundError as exc:
            if exc.name != f"app.features.{name}.tool":
                raise
    return modules


def import_models() -> None:
    """Import every feature's ``models`` module so ``Base.metadata`` is complete."""
    for name in feature_names():
        try:
            importlib.import_module(f"app.features.{name}.models")
        except ModuleNotFoundError as exc:
            if exc.name != f"app.features.{name}.models":
                raise


def migration_dirs() -> list[Path]:
    return [p for name in feature_names() if (p := _HERE / name / "migrations").is_dir()]
