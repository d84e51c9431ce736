"""What a feature folder contributes, and what it is given to do so.

Each ``app/features/<name>/__init__.py`` defines ``FEATURE = Feature(...)``. The
composition root (``app.parts`` discovers them, ``app.main`` wires them) takes each
contribution in: tools into the registry, HTTP routes into the app, a line into the
server instructions, demo/reference data into ``python -m app seed``, maintenance
commands into ``python -m app <feature> <command>``, its settings into ``deps.part``.

Features never import each other, nor the built-in authorization server. What one
part offers another goes through a small protocol here (``PrivateDocuments``,
``LocalAccounts``), wired by the composition root, so deleting the part that offers
it leaves the others working without it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from pydantic_settings import BaseSettings
from starlette.routing import BaseRoute

from app.auth.scopes import Scope
from app.broadcast import Broadcast
from app.db import Database, UnitOfWork
from app.limits import Limits
from app.mcp.errors import ToolFailure
from app.mcp.registry import McpAdditions, ToolRegistry
from app.net.guard import OutboundGuard
from app.observability.metrics import Reading
from app.settings import Settings, SettingsPart
from app.storage import Storage
from app.wording import Wording

say = Wording(__file__)
P = TypeVar("P", bound=BaseSettings)


class PrivateDocuments(Protocol):
    """Full-text indexing of one account's own documents, in the caller's transaction."""

    def put(self, uow: UnitOfWork, *, id: str, owner: str, title: str, url: str, body: str, source: str) -> None:
        """Add or replace the document ``id``; only ``owner`` will find it."""
        ...

    def remove(self, uow: UnitOfWork, ids: Sequence[str]) -> None: ...


@dataclass(frozen=True, slots=True)
class AccountProfile:
    """A local account as the other parts see it: never its password."""

    id: str  # opaque and stable: the token subject
    username: str
    display_name: str
    email: str | None


class LocalAccounts(Protocol):
    """The built-in authorization server's accounts (app/authserver); absent with an external IdP, whose
    subjects are not local accounts."""

    def profile(self, uow: UnitOfWork, subject: str) -> AccountProfile | None:
        """The account a token's subject names, None when there is none."""
        ...

    def demo(self, uow: UnitOfWork) -> list[AccountProfile]:
        """The demo accounts (development), for a feature's seed to give them data of their own."""
        ...

    def holds(self, uow: UnitOfWork, subject: str) -> bool:
        """Whether the account ``subject`` still exists, held until the caller's transaction ends:
        its deletion (/account) waits for the caller's writes, or the caller sees it gone."""
        ...


class AccountGone(ToolFailure):
    """A linked call whose account was deleted while it ran (its token passed the check before)."""

    advice = ("Tell the user their account was deleted, so nothing was saved; to keep things "
              "again they link the app to an account.")

    def __init__(self) -> None:
        super().__init__(say("Your account was deleted: nothing was saved."))


def require_account(accounts: LocalAccounts | None, uow: UnitOfWork, subject: str) -> None:
    """In a write for the linked ``subject``: refuse it when the account is gone (deleted while
    the call ran), so that nothing is kept for an account that no longer exists. Without the
    built-in authorization server (``accounts`` None), the identity provider owns the accounts."""
    if accounts is not None and not accounts.holds(uow, subject):
        raise AccountGone()


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
    # Messages to the caches of every worker and replica (through Redis when APP_REDIS_URL is set).
    broadcast: Broadcast = field(default_factory=Broadcast)
    # Offered by a feature (search) when present; None when no feature indexes documents.
    documents: PrivateDocuments | None = None
    # Offered by the built-in authorization server when it is installed and APP_AUTH_MODE=builtin.
    accounts: LocalAccounts | None = None
    # The parts' own settings (Feature.settings), by class: ``deps.part(FilesSettings)``.
    parts: Mapping[type, BaseSettings] = field(default_factory=dict)

    def part(self, kind: type[P]) -> P:
        """The settings ``kind`` a feature declared (``Feature(settings=kind)``), read once at start."""
        found = self.parts.get(kind)
        if not isinstance(found, kind):
            raise LookupError(f"{kind.__name__} is no feature's declared settings")
        return found


@dataclass(frozen=True)
class Feature:
    name: str
    # One sentence for the model: when to use this feature's tools.
    instructions: str = ""
    # Declare tools: ``tools(registry, deps)`` calls ``registry.tool(...)``.
    tools: Callable[[ToolRegistry, Deps], None] | None = None
    # Prompts, plain resources and the completion handler, declared with the SDK's own decorators
    # (``server.prompt()``, ``server.resource(uri)``, ``server.completion()``) once the tools are
    # in.
    # Tools are declared in ``tools`` only: that is where their schemes are enforced.
    mcp: Callable[[McpAdditions, Deps], None] | None = None
    # HTTP routes beside /mcp (a webhook, a download, ...).
    routes: Callable[[Deps], Sequence[BaseRoute]] | None = None
    # Idempotent data load run by ``python -m app seed`` (and by ``serve`` unless APP_SEED_ON_START=false).
    # Receives a write unit of work and the demo accounts (none without the built-in authorization server, or
    # in production) and returns a short summary; it is committed after it returns.
    seed: Callable[[UnitOfWork, Sequence[AccountProfile]], str] | None = None
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
    # What it keeps about a person, for the privacy page (/privacy): sentences, each in every
    # language it speaks ("en" required), written from its settings (how long files are kept).
    privacy: Callable[[Deps], Sequence[Mapping[str, str]]] | None = None
    # Deletes everything it keeps for one account (its rows, its indexed documents) when the
    # person deletes their account at /account: in the caller's unit of work, which commits once
    # for every part, so that the account and all it owned go together or not at all. Returns
    # how many items it deleted.
    forget: Callable[[UnitOfWork, str, Deps], int] | None = None
    # Its own settings: a SettingsPart subclass whose env_prefix is ``APP_<NAME>_`` (APP_FILES_MAX_BYTES), read
    # at start (one line per bad value) and handed to its code as ``deps.part(TheClass)``.
    settings: type[SettingsPart] | None = None
