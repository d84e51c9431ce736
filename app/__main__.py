"""Command line: ``python -m app serve | migrate | revision | seed | check | listing |
new-feature``, the built-in authorization server's ``users`` and ``clients`` while it is installed
(app.authserver.commands), and ``python -m app FEATURE COMMAND`` for a feature's own maintenance
commands (``files sweep``)."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.command import CommandLineError, OperatorError
from app.settings import Settings


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.db.migrate import upgrade
    from app.http.serving import run_server, serve_config
    from app.logging import configure_logging
    from app.main import (
        StartupRefused,
        authorization_server,
        create_app,
        discover_features,
        open_database,
        production_refusals,
    )
    from app.parts import refuse_demo_accounts, seed, tuning

    settings = _served_at(settings, args.host, args.port)
    if refusals := production_refusals(settings, authorization_server(settings)):  # before anything is written
        raise StartupRefused("\n".join(refusals))
    if problem := _unlistenable(args.host, args.port):
        raise StartupRefused(f"{problem}; nothing was started")
    configure_logging(settings.log_format, settings.log_level)
    # Build the app once here, before uvicorn forks: a bad feature or tool declaration is then
    # one line and exit 1, not a traceback in every worker that uvicorn respawns forever.
    db = open_database(settings)
    try:
        features = discover_features()
        create_app(settings, db=db, features=features)
        if settings.migrate_on_start:
            upgrade(settings.database_url)
        seeded = seed(db, features, settings) if settings.seed_on_start else None
        refuse_demo_accounts(settings, db)
    finally:
        db.dispose()
    check_limits(settings, args.workers)
    if seeded is not None:  # after the refusals: a refused start says one line, nothing else
        import structlog

        # What the start wrote, one step per feature: an operator sees the demo accounts were (not) made.
        structlog.get_logger("app.seed").info("seed.done", steps=seeded)
    speedups = tuning(settings)
    return run_server(serve_config(settings, "app.main:create_app_from_env", host=args.host, port=args.port,
                                   workers=args.workers,
                                   protocol=speedups.http_protocol(settings) if speedups else None))


def observability_refusals() -> list[str]:
    """Before anything imports prometheus-client (``serve`` only): the workers, and this process when it serves
    itself, must find the metrics directory in the environment at their first import of it. And an OTEL_*
    setting this server cannot honour is one line now, not a traceback in every worker."""
    from app.observability.multiprocess import MetricsDirError, prepare_multiprocess_dir
    from app.observability.traces import tracing_refusals
    from app.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        return exc.lines
    lines = tracing_refusals()
    # Imported already: this is not a process of its own (a test runs the command in its process); it will
    # not serve, and its environment is not this command's to change. tests/unit/test_observability.py checks
    # that nothing `python -m app` imports first imports prometheus-client.
    if settings.metrics and "prometheus_client" not in sys.modules and not lines:
        try:
            prepare_multiprocess_dir(settings.metrics_dir)
        except MetricsDirError as exc:
            lines.append(str(exc))
    return lines


def _served_at(settings: Settings, host: str, port: int) -> Settings:
    """Development without APP_BASE_URL: the URL the server advertises (OAuth metadata, challenges, download
    links) is where it listens, so ``serve --port 18107`` links to port 18107, not to the default 8000. The
    workers read their settings from the environment: the URL goes there."""
    import os

    from app.main import settings_or_exit

    if "base_url" in settings.model_fields_set or settings.production:
        return settings  # production: APP_BASE_URL is required (app.parts.production_refusals)
    netloc = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, f"[{host}]" if ":" in host else host)
    os.environ["APP_BASE_URL"] = f"http://{netloc}:{port}"
    return settings_or_exit()


def check_limits(settings: Settings, workers: int) -> None:
    """Before the workers start: a Redis that refuses this configuration stops the server (one line); one that
    does not answer, or none with several workers, is said once."""
    import anyio
    import structlog

    from app.limits import check_shared_store

    log = structlog.get_logger("app.limits")
    if settings.redis_url:
        if not anyio.run(check_shared_store, settings.redis_url, settings.redis_prefix):
            log.warning("limits.shared_store_unavailable", detail="Redis does not answer at start: limits are "
                        "counted in each process, and sign-in is refused, until it does")
    elif workers > 1:
        log.warning("limits.per_worker", workers=workers,
                    detail="limits are counted by each worker on its own, so each allows this many times its share: "
                           "set APP_REDIS_URL to count once for every worker and replica")


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from app.db.migrate import downgrade, upgrade

    if args.downgrade:
        downgrade(settings.database_url, args.downgrade)
    else:
        upgrade(settings.database_url, args.revision)
    print(f"migrated {_where(settings.database_url)}")
    return 0


def _revision(args: argparse.Namespace, settings: Settings) -> int:
    from app.db.migrate import new_revision

    path = new_revision(settings.database_url, args.message, autogenerate=not args.empty)
    print(f"wrote {path}: review it before you commit it")
    return 0


def _seed(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import discover_features, open_database
    from app.parts import seed

    db = open_database(settings)
    try:
        for line in seed(db, discover_features(), settings):
            print(f"seeded {line}")
    finally:
        db.dispose()
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    from app.logging import configure_logging
    from app.mcp.check import collect, lint

    configure_logging(settings.log_format, "warning")

    if args.url:
        try:
            with httpx.Client(timeout=15) as http:
                tools, resources = collect(http, args.url)
        except (httpx.HTTPError, RuntimeError, ValueError) as exc:
            print(f"check: cannot reach an MCP server at {args.url}: {exc}", file=sys.stderr)
            return 2
    else:
        from starlette.testclient import TestClient

        from app.main import create_app

        with TestClient(create_app(settings), base_url=settings.base_url) as http:
            tools, resources = collect(http, "/mcp")
    problems = lint(tools, resources)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"ok: {len(tools)} tools, {len(resources)} resources")
    return 1 if problems else 0


def _listing(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    from app.listing.command import instructions_of, run
    from app.main import discover_features
    from app.parts import FEATURES_PACKAGE

    commands = _authserver_commands()
    builtin = commands is not None and settings.auth_mode == "builtin"
    sign_in = commands.review_sign_in(settings, args.account) if commands and builtin else None
    features = discover_features()
    root = Path(str(importlib.import_module(FEATURES_PACKAGE).__path__[0]))
    plugin = Path(args.plugin) if args.plugin else None

    def against(http: Any, mcp_url: str, base_url: str, published: str) -> int:
        return run(settings, http, mcp_url, base_url, root, instructions_of(features),
                   published=published, plugin_dir=plugin, sign_in=sign_in,
                   account_page=f"{published}/account" if builtin else None)

    if args.url:
        base_url = args.url.rstrip("/").removesuffix("/mcp")
        try:
            with httpx.Client(timeout=60) as http:
                return against(http, args.url, base_url, base_url)
        except (httpx.HTTPError, RuntimeError, ValueError) as exc:
            print(f"listing: cannot reach an MCP server at {args.url}: {exc}", file=sys.stderr)
            return 2
    with _served_here(settings, features) as (served, http):
        return against(http, served.mcp_url, served.base_url, settings.base_url)


@contextlib.contextmanager
def _served_here(settings: Settings, features: Any) -> Iterator[tuple[Settings, Any]]:
    """This checkout's app, migrated and seeded as ``serve`` would, served by uvicorn on a free
    loopback port for the time of a command (``listing``): its sample files are fetched through
    the outbound guard as any file is, so the server must be one a socket reaches."""
    import os
    import socket
    import threading
    import time

    import httpx
    import uvicorn

    from app.db.migrate import upgrade
    from app.main import create_app, open_database
    from app.parts import StartupRefused, seed
    from app.settings import load_settings

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    address = f"127.0.0.1:{sock.getsockname()[1]}"
    # What a development server fetching its own samples needs: its address, let through.
    os.environ["APP_BASE_URL"] = f"http://{address}"
    os.environ["APP_OUTBOUND_ALLOWLIST"] = ",".join([*settings.outbound_allowlist, address])
    if settings.allowed_hosts:  # the configured public names, and this address the replay calls
        os.environ["APP_ALLOWED_HOSTS"] = ",".join([*settings.allowed_hosts, address])
    served = load_settings()
    if served.migrate_on_start:
        upgrade(served.database_url)
    if served.seed_on_start:
        db = open_database(served)
        try:
            seed(db, features, served)
        finally:
            db.dispose()
    server = uvicorn.Server(uvicorn.Config(create_app(served, features=features), log_config=None,
                                           ws="none", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        if not server.started:
            raise StartupRefused(f"the app did not start on {address}")
        with httpx.Client(timeout=60) as http:
            yield served, http
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def _feature_command(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from app.main import run_command

    print(f"{args.label}: {anyio.run(run_command, settings, args.feature, args.action)}")
    return 0


CORE_COMMANDS = ("serve", "migrate", "revision", "seed", "check", "listing", "new-feature")
FEATURE_USAGE = ("usage: python -m app FEATURE COMMAND   a feature's maintenance command (Feature.commands), "
                 "e.g. files sweep")


def _where(url: str) -> str:
    # Never print credentials: a password before the host, or in the query (?password=...).
    return url.split("@")[-1].split("?")[0]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Not a core command: a feature's (``files sweep``), from Feature.commands; discovery (which imports every
    # feature) waits for the command's turn, after the parse.
    # Not for serve: what the commands import (app.feature) imports prometheus-client, which serve must first
    # point at the metrics directory (observability_refusals).
    commands = _authserver_commands() if not argv or argv[0] != "serve" else None
    if commands is None and argv and argv[0] in AUTHSERVER_COMMANDS:
        print(f"{argv[0]}: a command of the built-in authorization server, which is not installed (app/authserver): "
              "accounts and clients live in your identity provider", file=sys.stderr)
        return 2
    if argv and not argv[0].startswith("-") and argv[0] not in CORE_COMMANDS and not (
            commands is not None and argv[0] in commands.COMMANDS):
        if len(argv) != 2:
            print(FEATURE_USAGE, file=sys.stderr)
            return 2
        return _run(argparse.Namespace(command="feature", feature=argv[0], action=argv[1],
                                       label=f"{argv[0]} {argv[1]}"))
    parser = argparse.ArgumentParser(prog="python -m app", epilog=FEATURE_USAGE.removeprefix("usage: "))
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate, seed, then run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    # Read as text and checked by _listen_problem: a bad one is one line, not argparse's usage.
    serve.add_argument("--port", default="8000")
    serve.add_argument("--workers", default="1")
    migrate = sub.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("--revision", default="heads")
    migrate.add_argument("--downgrade", metavar="REVISION")
    revision = sub.add_parser("revision", help="write the next migration, diffed from the models (database at head)")
    revision.add_argument("message", help='what it does, e.g. "drop zoo tables"')
    revision.add_argument("--empty", action="store_true", help="write an empty migration instead of a diff")
    sub.add_parser("seed", help="load every feature's bundled data (idempotent)")
    check = sub.add_parser("check", help="lint tool and widget descriptors against the ChatGPT rules")
    check.add_argument("--url", help="check a running server's /mcp URL instead of this one")
    listing = sub.add_parser("listing", help="check the directory listing, replay its test cases "
                             "against the server, write the plugin (docs/submission.md)")
    listing.add_argument("--url", help="a running server's /mcp URL (default: this checkout's "
                         "app, in process)")
    listing.add_argument("--plugin", metavar="DIR", help="write the plugin there (manifest, "
                         ".mcp.json, onboarding skill, logo)")
    listing.add_argument("--account", help="the account the linked test cases sign in as "
                         "(default: the demo account; its password in LISTING_PASSWORD)")
    new = sub.add_parser("new-feature", help="write a feature folder (a tool, its service and "
                         "schemas) and its tests, in this checkout")
    new.add_argument("name", help="its name: a lowercase Python identifier, e.g. weather")
    handlers = commands.add_parsers(sub) if commands is not None else {}
    args = parser.parse_args(argv)
    if args.command == "new-feature":
        return _new_feature(args.name)
    if commands is not None and (problem := commands.usage_error(args)):
        parser.error(problem)
    args.label = args.command
    if args.command in handlers:
        args.handler = _part_command(handlers[args.command])
    return _run(args)


AUTHSERVER_COMMANDS = ("users", "clients")


def _new_feature(name: str) -> int:
    """Writes source files only: no settings, database or feature discovery (a feature that does not
    load must not stop one from writing another)."""
    from app.scaffold import new_feature

    try:
        written = new_feature(name)
    except CommandLineError as exc:
        print(f"new-feature: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    tests = " ".join(path for path in written if path.startswith("tests/"))
    print(f"next: ./dev check (one more tool), ./dev test {tests}; "
          "then make it yours (docs/forking.md)")
    return 0


def _authserver_commands() -> Any:
    """app.authserver.commands, None in a fork without the built-in authorization server (``git rm -r`` leaves its
    ``__pycache__`` behind: a namespace package of compiled files only, which is no package)."""
    try:
        return importlib.import_module("app.authserver.commands")
    except ModuleNotFoundError as exc:
        if exc.name not in ("app.authserver", "app.authserver.commands"):
            raise
        return None


def _part_command(handler: Any) -> Any:
    """A command of the authorization server's, with the database and (when it needs them) the
    scopes, or what the features keep for an account, to delete with it."""

    def run(args: argparse.Namespace, settings: Settings) -> int:
        from app.main import discover_features, open_database, scope_catalog

        db = open_database(settings)
        try:
            return int(handler(args, settings, db, lambda: scope_catalog(discover_features()),
                               lambda: _forgetting(settings, db)))
        finally:
            db.dispose()

    return run


@contextlib.contextmanager
def _forgetting(settings: Settings, db: Any) -> Iterator[Any]:
    """Every feature's Feature.forget, with the shared services it may use, closed after."""
    import anyio

    from app.main import build_deps, discover_features
    from app.parts import forget_everywhere

    features = discover_features()
    deps = build_deps(settings, db, features)
    try:
        yield forget_everywhere(features, deps)
    finally:
        anyio.run(deps.storage.aclose)
        anyio.run(deps.limits.aclose)


def _listen_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``serve``'s --port or --workers, in one line, or None (and both are
    numbers from then on)."""
    port, workers = str(args.port), str(args.workers)
    if not re.fullmatch(r"[0-9]{1,5}", port) or not 0 <= int(port) <= 65535:
        return f"--port {port}: a port is a number from 1 to 65535"
    if int(port) == 0:
        # The resource, the issuer and every link carry the port, and they are made before the
        # socket is bound: a port the system picks could not be in them.
        return ("--port 0: the server publishes its address before it listens, so it cannot "
                "take any free port: choose one from 1 to 65535")
    if not re.fullmatch(r"[0-9]{1,4}", workers) or int(workers) < 1:
        return f"--workers {workers}: a number of worker processes, 1 or more"
    args.port, args.workers = int(port), int(workers)
    return None


def _unlistenable(host: str, port: int) -> str | None:
    """Why ``serve`` could not listen on ``host:port``, or None: tried before anything is
    migrated or seeded, where uvicorn would find it only after, its line among theirs."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"{host}:{port} is in use (is another server listening there?)"
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


def _unknown_names() -> list[str]:
    """One line per variable under APP_ that names no setting (app.parts.unknown_settings)."""
    from app.settings import ENV_PREFIX, NOT_SETTINGS

    given = _given_names()
    # Only the core's names, or none: no feature needs importing (a second of the 2 s in which a
    # bad core value is refused) to know that none is unknown.
    core = {f"{ENV_PREFIX}{name}".upper() for name in Settings.model_fields} | set(Settings.renamed)
    names = {n.upper() for n in given if n.upper().startswith(ENV_PREFIX)}
    if all(n in core or NOT_SETTINGS.fullmatch(n) for n in names):
        return []
    from app.main import FeatureError
    from app.parts import discover_features, unknown_settings

    try:
        return unknown_settings(discover_features(), given)
    except FeatureError:  # a feature that cannot load: said by check_part_settings, in one line
        return []


def _given_names() -> set[str]:
    """The names of the variables set for this server: in its environment, and in the ``.env``
    file pydantic-settings reads beside it."""
    import os

    from dotenv import dotenv_values

    return set(os.environ) | set(dotenv_values(".env"))


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve" and (problem := _listen_problem(args)):
        print(f"serve: {problem}", file=sys.stderr)
        return 2
    if args.command == "serve" and (lines := observability_refusals()):
        # A misspelt name may be why a value is bad (or missing): said first, here and below.
        for line in [*_unknown_names(), *lines]:
            print(line, file=sys.stderr)
        return 2

    from alembic.util.exc import CommandError
    from sqlalchemy.exc import DBAPIError

    from app.db.errors import DatabaseNotMigrated, DatabaseUnavailable, is_outage
    from app.db.migrate import MigrationError
    from app.limits import SharedStoreRefused
    from app.logging import configure_logging
    from app.main import FeatureError, StartupRefused
    from app.mcp.registry import RegistryError
    from app.parts import check_part_settings
    from app.settings import SettingsError, load_settings
    from app.storage import StorageError

    unknown = _unknown_names()
    try:  # the core's settings, then every part's, before a command writes anything
        settings = load_settings()
        check_part_settings(settings)
    except SettingsError as exc:
        for line in [*unknown, *exc.lines]:
            print(line, file=sys.stderr)
        return 2
    except FeatureError as exc:
        print(f"{args.label}: {exc}", file=sys.stderr)
        return 1
    for line in unknown:
        print(line, file=sys.stderr)
    if args.command != "serve":
        # One-shot commands report their own outcome in one line; only errors add log lines.
        configure_logging(settings.log_format, "error")
    handlers = {"serve": _serve, "migrate": _migrate, "revision": _revision, "seed": _seed,
                "check": _check, "listing": _listing, "feature": _feature_command}
    handler = getattr(args, "handler", None) or handlers[args.command]
    try:
        return handler(args, settings)
    except SettingsError as exc:  # a part's settings (the authorization server's, a feature's)
        for line in exc.lines:
            print(line, file=sys.stderr)
        return 2
    except (FeatureError, RegistryError, MigrationError, CommandError, DatabaseUnavailable, DatabaseNotMigrated,
            StartupRefused, StorageError, SharedStoreRefused, OperatorError) as exc:
        # Operator-facing problems: one line each, no traceback.
        for line in str(exc).splitlines():
            print(f"{args.label}: {line}", file=sys.stderr)
        return 1
    except CommandLineError as exc:
        print(f"{args.label}: {exc}", file=sys.stderr)
        return 2
    except DBAPIError as exc:
        if not is_outage(exc):
            raise
        print(f"{args.label}: cannot reach the database at {_where(settings.database_url)}: "
              f"{str(exc.orig).strip().splitlines()[0] if exc.orig else exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
