"""The parts this server is assembled from, and the rules they start by: the features discovered under
``app/features``, the built-in authorization server when its package is installed (``app/authserver``), the
settings each part declares, the seed step, and what production refuses to start with.

Part of the composition root with ``app.main``: nothing below it imports this module.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol
from urllib.parse import urlsplit

from mcp.server.auth.provider import TokenVerifier
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from pydantic_settings import BaseSettings
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from app.auth.scopes import ScopeCatalog
from app.broadcast import Broadcast
from app.db import Database, DatabaseNotMigrated, UnitOfWork
from app.db.database import Hops
from app.db.errors import NOT_MIGRATED_MESSAGE
from app.db.locks import SEED_LOCK, advisory_lock
from app.feature import AccountProfile, Deps, Feature, LocalAccounts, PrivateDocuments
from app.http.serving import ProtocolFactory
from app.limits import Limits
from app.mcp.admission import Lane
from app.net.guard import OutboundGuard
from app.observability.metrics import Metrics
from app.preferences import Preferences
from app.secret import GENERATED
from app.settings import (
    ENV_PREFIX,
    NOT_SETTINGS,
    Settings,
    SettingsError,
    SettingsPart,
    load_part,
)

FEATURES_PACKAGE = "app.features"
AUTHSERVER_PACKAGE = "app.authserver"
TUNING_PACKAGE = "app.tuning"


class FeatureError(RuntimeError):
    """A feature folder that cannot be loaded; the message says which and why."""


class StartupRefused(RuntimeError):
    """A configuration this server will not run with; the message names the setting to change."""


def authserver_package() -> ModuleType | None:
    """``app.authserver.wiring``, or None when the package is not installed (a fork with an external IdP)."""
    try:
        return importlib.import_module(f"{AUTHSERVER_PACKAGE}.wiring")
    except ModuleNotFoundError as exc:
        if exc.name not in (AUTHSERVER_PACKAGE, f"{AUTHSERVER_PACKAGE}.wiring"):
            raise  # the package is there and broken: that is its traceback to show
        return None


def tuning(settings: Settings) -> SpeedUps | None:
    """The speed-up package (``app/tuning``) when it is installed and APP_TUNING names any of its pieces, with
    those pieces; None: the stock core."""
    if not settings.tuning:
        return None
    try:
        module = importlib.import_module(TUNING_PACKAGE)
    except ModuleNotFoundError as exc:
        if exc.name != TUNING_PACKAGE:
            raise  # the package is there and broken: that is its traceback to show
        return None
    # What `git rm -r` leaves behind (compiled files only) imports as an empty namespace package.
    speedups = getattr(module, "Tuning", None)
    return speedups(settings.tuning) if speedups is not None else None


def load_authserver_models() -> None:
    """Import the authorization server's tables (accounts, OAuth state) when it is installed, whatever the mode:
    with the features' (discover_features), they complete Base.metadata for alembic."""
    if (wiring := authserver_package()) is not None:
        importlib.import_module(wiring.MODELS)


def part_settings(kinds: Sequence[type[SettingsPart]], given: Sequence[SettingsPart] = ()) -> dict[type, SettingsPart]:
    """Each part's settings: the instance given (tests), else read from the environment; every bad value of
    every part in one SettingsError."""
    parts: dict[type, SettingsPart] = {type(p): p for p in given}
    lines: list[str] = []
    for kind in kinds:
        if kind not in parts:
            try:
                parts[kind] = load_part(kind)
            except SettingsError as exc:
                lines += exc.lines
    if lines:
        raise SettingsError(lines)
    return parts


def check_part_settings(settings: Settings) -> None:
    """Before any command runs: the settings of every installed part it could touch (the features', and the
    authorization server's when it serves), every bad value of them in one SettingsError."""
    kinds: list[type[SettingsPart]] = [f.settings for f in discover_features() if f.settings is not None]
    if settings.auth_mode == "builtin" and (wiring := authserver_package()) is not None:
        kinds.append(wiring.AuthServerSettings)
    part_settings(kinds)


def _setting_kinds(features: Sequence[Feature]) -> list[type[BaseSettings]]:
    kinds: list[type[BaseSettings]] = [Settings, *(f.settings for f in features if f.settings is not None)]
    if (wiring := authserver_package()) is not None:
        kinds.append(wiring.AuthServerSettings)
    return kinds


def setting_names(features: Sequence[Feature]) -> set[str]:
    """Every environment variable this server reads: the core's, the authorization server's (when
    installed) and the features' own."""
    # A field under an alias (the providers' secrets found by their own names) is read by no name
    # of its own.
    return {f"{kind.model_config.get('env_prefix') or ''}{name}".upper()
            for kind in _setting_kinds(features) for name, field in kind.model_fields.items()
            if field.validation_alias is None}


def unknown_settings(features: Sequence[Feature], names: Iterable[str]) -> list[str]:
    """One line for each of ``names`` (the environment's, ``.env``'s) under the prefix that this
    server does not read, with the closest name it does: a misspelt APP_LOG_LEVLE is otherwise
    ignored without a word."""
    kinds = _setting_kinds(features)
    known = setting_names(features)
    # A renamed one is refused with its new name (load_part); the others are read by a part itself.
    renamed = {old for kind in kinds for old in getattr(kind, "renamed", {})}
    patterns = [NOT_SETTINGS, *(p for kind in kinds for p in getattr(kind, "also_reads", ()))]
    lines = []
    for given in sorted(set(names)):
        name = given.upper()  # read in any case, as pydantic-settings reads them
        if not name.startswith(ENV_PREFIX) or name in known or name in renamed or any(
                p.fullmatch(name) for p in patterns):
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]}?" if close else ""
        lines.append(f"{given}: no setting has this name, so it is ignored{hint}")
    return lines


def authorization_server(settings: Settings, parts: Sequence[SettingsPart] = ()) -> AuthorizationServer | None:
    """The built-in authorization server (``BuiltinAuthorizationServer``) when APP_AUTH_MODE=builtin, else None."""
    if settings.auth_mode != "builtin":
        return None
    wiring = authserver_package()
    if wiring is None:
        raise StartupRefused("APP_AUTH_MODE: builtin needs the built-in authorization server (app/authserver), "
                             "which is not installed: set APP_AUTH_MODE=external with APP_OAUTH_ISSUER and "
                             "APP_OAUTH_JWKS_URL")
    own = part_settings([wiring.AuthServerSettings], parts)[wiring.AuthServerSettings]
    return wiring.BuiltinAuthorizationServer(settings, own)


def discover_features(package: str = FEATURES_PACKAGE) -> list[Feature]:
    """Every folder under ``app/features`` is one feature; its ``__init__`` defines ``FEATURE``."""
    root = Path(str(importlib.import_module(package).__path__[0]))
    features: list[Feature] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))):
        if compiled_only(folder):
            continue  # what `git rm -r` leaves behind: compiled files only
        if not (folder / "__init__.py").is_file():
            raise FeatureError(f"{folder} is not a feature: it has no __init__.py (add one that defines "
                               f"FEATURE = Feature(...), or delete the folder)")
        try:
            module = importlib.import_module(f"{package}.{folder.name}")
        except ValueError as exc:  # a declaration refused at import (a Widget, a scheme): say where
            raise FeatureError(f"{folder}: {exc}") from exc
        feature = getattr(module, "FEATURE", None)
        if not isinstance(feature, Feature):
            raise FeatureError(f"{folder}/__init__.py must define FEATURE = Feature(...)")
        if feature.seed is not None and not _takes_two(feature.seed):
            raise FeatureError(f"{folder}: its seed must take (uow, demo_accounts): the demo accounts are its second "
                               "argument (docs/forking.md)")
        if (folder / "models.py").is_file():
            importlib.import_module(f"{package}.{folder.name}.models")  # complete Base.metadata for alembic
        features.append(feature)
    names = [f.name for f in features]
    if duplicates := sorted({n for n in names if names.count(n) > 1}):
        raise FeatureError(f"feature names must be unique: {', '.join(duplicates)}")
    return features


def compiled_only(folder: Path) -> bool:
    """No file but compiled ones, at any depth: what `git rm -r` of a feature that ran leaves
    behind (its subpackages keep their __pycache__ too, as app/features/files/analysis/ does)."""
    files = (path.relative_to(folder).parts for path in folder.rglob("*") if path.is_file())
    return all("__pycache__" in parts for parts in files)


def _takes_two(fn: Callable[..., object]) -> bool:
    try:
        inspect.signature(fn).bind(None, ())
    except TypeError:
        return False
    return True


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def forget_everywhere(features: Sequence[Feature], deps: Deps) -> Callable[[UnitOfWork, str], int]:
    """What every feature keeps for an account (Feature.forget), deleted in the caller's unit of
    work: the authorization server's, which deletes the account with it."""
    hooks = [feature.forget for feature in features if feature.forget is not None]

    def forget(uow: UnitOfWork, subject: str) -> int:
        # The account's settings (app.preferences) go with what each feature kept.
        return Preferences.forget(uow, subject) + sum(hook(uow, subject, deps) for hook in hooks)

    return forget



class AuthorizationServer(Protocol):
    """What the composition root uses of the built-in authorization server (app.authserver.wiring)."""

    secret_use: str  # what APP_SECRET_KEY signs for it
    accounts: LocalAccounts
    seeds_demo_accounts: bool  # development, or production with APP_ALLOW_DEMO_ACCOUNTS=true

    def production_refusals(self) -> list[str]: ...

    def privacy(self) -> list[dict[str, str]]: ...

    def seed(self, uow: UnitOfWork) -> str: ...

    def demo_accounts_refusal(self, db: Database) -> str | None: ...

    def build(self, db: Database, catalog: ScopeCatalog, guard: OutboundGuard, limits: Limits,
              metrics: Metrics | None, broadcast: Broadcast,
              forget: Callable[[UnitOfWork, str], int]
              ) -> tuple[TokenVerifier, list[BaseRoute]]: ...


class SpeedUps(Protocol):
    """What the composition root installs from the speed-up package (app.tuning.Tuning): each piece, or None
    where APP_TUNING leaves it out."""

    hops: Hops | None  # database calls' threads

    def lane(self, manager: StreamableHTTPSessionManager) -> Lane | None: ...

    def http_protocol(self, settings: Settings) -> ProtocolFactory | None: ...

    def route(self, app: ASGIApp, mcp: Route) -> ASGIApp: ...

    def settle(self) -> None: ...


def production_refusals(settings: Settings, server: AuthorizationServer | None = None) -> list[str]:
    """What a production server must not start with, all of it at once, one line per variable."""
    if not settings.production:
        return []
    lines = []
    if "base_url" not in settings.model_fields_set:
        lines.append("APP_BASE_URL: APP_ENV=production needs the https URL ChatGPT reaches this server at "
                     "(e.g. https://mcp.example.com): it is in the OAuth metadata, the challenges and the links")
    elif (base := urlsplit(settings.base_url)).scheme != "https" and base.hostname not in LOOPBACK_HOSTS:
        lines.append(f"APP_BASE_URL: APP_ENV=production needs https (got {settings.base_url!r}): tokens and "
                     "sign-in forms never cross a network in the clear")
    if server is not None:
        lines += server.production_refusals()
    if not settings.allow_generated_keys and not settings.secret_key:
        uses = [use for use, needed in ((server.secret_use if server else "", server is not None),
                                        ("the download links of APP_STORAGE_BACKEND=local",
                                         settings.storage_backend == "local")) if needed]
        if uses:
            lines.append(f"APP_SECRET_KEY: APP_ENV=production needs it (it signs {' and '.join(uses)}); {GENERATED}")
    if not settings.allow_generated_keys and not settings.request_state_keys:
        lines.append(
            "APP_REQUEST_STATE_KEYS: APP_ENV=production needs it (it seals the state of a request "
            f"that asks the user for input, which another replica may complete); {GENERATED}"
        )
    return lines


def documents_of(features: Sequence[Feature]) -> PrivateDocuments | None:
    offered = [f for f in features if f.documents is not None]
    if len(offered) > 1:
        raise FeatureError(f"only one feature may index private documents ({', '.join(f.name for f in offered)})")
    return offered[0].documents if offered else None


def feature_parts(features: Sequence[Feature], given: Sequence[SettingsPart] = ()) -> dict[type, SettingsPart]:
    """The settings the features declare, each under its own prefix (APP_<FEATURE>_)."""
    for feature in features:
        prefix = f"APP_{feature.name.upper().replace('-', '_')}_"
        if feature.settings is not None and feature.settings.model_config.get("env_prefix") != prefix:
            raise FeatureError(f"feature {feature.name!r}: its settings ({feature.settings.__name__}) must read "
                               f"env_prefix={prefix!r}")
    return part_settings([f.settings for f in features if f.settings is not None], given)


def seed(db: Database, features: Sequence[Feature], settings: Settings) -> list[str]:
    """The authorization server's demo accounts (development), then every feature's idempotent seed, one
    transaction each; returns one summary line per step.

    Replicas starting together take turns (PostgreSQL advisory lock): the later ones find
    every row already current and write nothing.
    """
    server = authorization_server(settings)
    lines = []
    with db.engine.connect() as lock_holder, advisory_lock(lock_holder, SEED_LOCK):
        # Said even when no step would touch a table (a fork with nothing to seed): seeding is for a current schema.
        if db.schema_status_sync() in ("not migrated", "behind"):
            raise DatabaseNotMigrated(NOT_MIGRATED_MESSAGE)
        demo: Callable[[UnitOfWork], list[AccountProfile]] = lambda _: []  # noqa: E731
        if server is not None and server.seeds_demo_accounts:
            lines.append(f"accounts: {db.write_sync(server.seed)}")
            demo = server.accounts.demo
        lines += [f"{f.name}: {db.write_sync(lambda uow, seed=f.seed: seed(uow, demo(uow)))}"
                  for f in features if f.seed is not None]
    return lines


def refuse_demo_accounts(settings: Settings, db: Database) -> None:
    """Production with the demo accounts (known password) still in the database: refuse to serve."""
    server = authorization_server(settings)
    if server is not None and (refusal := server.demo_accounts_refusal(db)):
        raise StartupRefused(refusal)


def scope_catalog(features: Sequence[Feature]) -> ScopeCatalog:
    try:
        return ScopeCatalog(scope for feature in features for scope in feature.scopes)
    except ValueError as exc:
        raise FeatureError(str(exc)) from None
