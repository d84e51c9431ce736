"""What a feature folder contributes, and what it is given to do so.

Each ``app/features/<name>/__init__.py`` defines ``FEATURE = Feature(...)``. The
composition root (``app.main``) discovers them and wires each contribution in:
tools into the registry, HTTP routes into the app, a line into the server
instructions, and demo/reference data into ``python -m app seed``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from starlette.routing import BaseRoute

from app.auth.scopes import Scope
from app.db import Database, UnitOfWork
from app.mcp.registry import ToolRegistry
from app.settings import Settings


@dataclass(frozen=True, slots=True)
class Deps:
    """The shared services a feature may use; built once by the composition root."""

    settings: Settings
    db: Database


@dataclass(frozen=True)
class Feature:
    name: str
    # One sentence for the model: when to use this feature's tools.
    instructions: str = ""
    # Declare tools: ``tools(registry, deps)`` calls ``registry.tool(...)``.
    tools: Callable[[ToolRegistry, Deps], None] | None = None
    # HTTP routes beside /mcp (OAuth endpoints, downloads, ...).
    routes: Callable[[Deps], Sequence[BaseRoute]] | None = None
    # Idempotent data load run by ``python -m app seed`` (and by ``serve`` unless APP_SEED_ON_START=false).
    # Receives a write unit of work and returns a short summary; it is committed after it returns.
    seed: Callable[[UnitOfWork], str] | None = None
    # OAuth scopes its tools ask for: published in the metadata, described on the consent page.
    scopes: Sequence[Scope] = ()
