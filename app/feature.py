"""What a feature folder contributes, and what it is given to do so.

Each ``app/features/<name>/__init__.py`` defines ``FEATURE = Feature(...)``. The
composition root (``app.main``) discovers them and wires each contribution in:
tools into the registry, HTTP routes into the app, a line into the server
instructions, demo/reference data into ``python -m app seed``, and maintenance
commands into ``python -m app <feature> <command>``.

Features never import each other. What one offers another goes through a small
protocol here (``PrivateDocuments``), wired by the composition root, so deleting
the feature that offers it leaves the other working without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from starlette.routing import BaseRoute

from app.auth.scopes import Scope
from app.db import Database, UnitOfWork
from app.limits import Limits
from app.mcp.registry import ToolRegistry
from app.net.guard import OutboundGuard
from app.observability.metrics import Reading
from app.settings import Settings
from app.storage import Storage


class PrivateDocuments(Protocol):
    """Full-text indexing of one account's own documents, in the caller's transaction."""

    def put(self, uow: UnitOfWork, *, id: str, owner: str, title: str, url: str, body: str, source: str) -> None:
        """Add or replace the document ``id``; only ``owner`` will find it."""
        ...

    def remove(self, uow: UnitOfWork, ids: Sequence[str]) -> None: ...


@dataclass(frozen=True, slots=True)
class Deps:
    """The shared services a feature may use; built once by the composition root."""

    settings: Settings
    db: Database
    # Counters and per-caller budgets, shared by the fleet when APP_REDIS_URL is set.
    limits: Limits
    # Every fetch of a URL a caller gave goes through the guard; every byte at rest through storage.
    guard: OutboundGuard
    storage: Storage
    # Offered by a feature (search) when present; None when no feature indexes documents.
    documents: PrivateDocuments | None = None


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
    # This feature indexes other features' private documents (search does).
    documents: PrivateDocuments | None = None
    # Maintenance commands run as ``python -m app <feature name> <command>`` (e.g. ``files sweep``): each
    # receives the shared services and returns a one-line summary.
    commands: Mapping[str, Callable[[Deps], Awaitable[str]]] = field(default_factory=dict)
    # Gauges read from the database at each scrape of /metrics (how many files are kept): a read unit of work in,
    # readings out.
    gauges: Callable[[UnitOfWork], Iterable[Reading]] | None = None
