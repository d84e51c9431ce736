"""Command line: ``python -m app serve | migrate | revision | seed | check | users | clients``, and
``python -m app FEATURE COMMAND`` for a feature's own maintenance commands (``files sweep``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from app.settings import Settings


class CommandLineError(Exception):
    """A command that cannot go on as invoked: one line, exit 2."""


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.db.migrate import upgrade
    from app.http.serving import run_server, serve_config
    from app.logging import configure_logging
    from app.main import (
        StartupRefused,
        create_app,
        discover_features,
        open_database,
        production_refusals,
        refuse_demo_accounts,
        seed,
    )

    settings = _served_at(settings, args.host, args.port)
    if refusals := production_refusals(settings):  # before anything is opened or written
        raise StartupRefused("\n".join(refusals))
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
    return run_server(serve_config(settings, "app.main:create_app_from_env", host=args.host, port=args.port,
                                   workers=args.workers))


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
        return settings  # production: APP_BASE_URL is required (app.main.production_refusals)
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
    from app.main import discover_features, open_database, seed

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


def _users(args: argparse.Namespace, settings: Settings) -> int:
    import getpass

    from app.auth.accounts import AccountRepository, create_account, set_disabled
    from app.main import open_database

    db = open_database(settings)
    try:
        if args.action == "create":
            if not args.password_stdin and not sys.stdin.isatty():
                # No terminal (a script, a container without -t): getpass would fall back to the pipe with a
                # warning, or die on EOFError.
                raise CommandLineError("no terminal to ask for the password on: pipe it in with --password-stdin")
            try:
                password = sys.stdin.readline().rstrip("\n") if args.password_stdin else getpass.getpass("Password: ")
            except (EOFError, KeyboardInterrupt):
                raise CommandLineError("no password given: nothing was created") from None
            username, account_id = db.write_sync(lambda uow: _ids(create_account(
                uow, args.username, password, display_name=args.name, email=args.email)))
            print(f"created {username} ({account_id})")
        elif args.action in ("disable", "enable"):
            username, account_id = db.write_sync(lambda uow: _ids(set_disabled(uow, args.username,
                                                                               args.action == "disable")))
            print(f"{args.action}d {username} ({account_id}); its tokens "
                  f"{'stop working now' if args.action == 'disable' else 'work again'}")
        else:
            rows = db.read_sync(lambda uow: [
                (a.username, a.id, "disabled" if a.disabled_at else "demo" if a.is_demo else "active", a.email or "")
                for a in uow.repository(AccountRepository).all()])
            for row in rows:
                print("\t".join(row))
    finally:
        db.dispose()
    return 0


def _ids(account: Any) -> tuple[str, str]:
    return account.username, account.id


def _clients(args: argparse.Namespace, settings: Settings) -> int:
    from app.auth.clients import AUTH_METHODS, ClientMetadataError, register_client, validate_metadata
    from app.auth.scopes import ScopeCatalog
    from app.main import discover_features, open_database

    catalog = ScopeCatalog(scope for feature in discover_features() for scope in feature.scopes)
    data = {"client_name": args.name, "redirect_uris": args.redirect_uri,
            "token_endpoint_auth_method": args.auth_method, **({"scope": args.scope} if args.scope else {}),
            **({"jwks_uri": args.jwks_uri} if args.jwks_uri else {})}
    try:
        metadata = validate_metadata(data, catalog, auth_methods=AUTH_METHODS, default_auth="client_secret_basic")
    except ClientMetadataError as exc:
        print(f"clients: {exc}", file=sys.stderr)
        return 2
    db = open_database(settings)
    try:
        row, secret = db.write_sync(lambda uow: register_client(uow, metadata, kind="static"))
    finally:
        db.dispose()
    print(f"client_id: {row.client_id}")
    if secret:
        print(f"client_secret: {secret}   (shown once; only its hash is stored)")
    return 0


def _feature_command(args: argparse.Namespace, settings: Settings) -> int:
    import anyio

    from app.main import run_command

    print(f"{args.label}: {anyio.run(run_command, settings, args.feature, args.action)}")
    return 0


CORE_COMMANDS = ("serve", "migrate", "revision", "seed", "check", "users", "clients")
FEATURE_USAGE = ("usage: python -m app FEATURE COMMAND   a feature's maintenance command (Feature.commands), "
                 "e.g. files sweep")


def _where(url: str) -> str:
    return url.split("@")[-1]  # never print credentials


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Not a core command: a feature's (``files sweep``), from Feature.commands; discovery (which imports every
    # feature) waits for the command's turn, after the parse.
    if argv and not argv[0].startswith("-") and argv[0] not in CORE_COMMANDS:
        if len(argv) != 2:
            print(FEATURE_USAGE, file=sys.stderr)
            return 2
        return _run(argparse.Namespace(command="feature", feature=argv[0], action=argv[1],
                                       label=f"{argv[0]} {argv[1]}"))
    parser = argparse.ArgumentParser(prog="python -m app", epilog=FEATURE_USAGE.removeprefix("usage: "))
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="migrate, seed, then run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    migrate = sub.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("--revision", default="heads")
    migrate.add_argument("--downgrade", metavar="REVISION")
    revision = sub.add_parser("revision", help="write the next migration, diffed from the models (database at head)")
    revision.add_argument("message", help='what it does, e.g. "drop zoo tables"')
    revision.add_argument("--empty", action="store_true", help="write an empty migration instead of a diff")
    sub.add_parser("seed", help="load every feature's bundled data (idempotent)")
    check = sub.add_parser("check", help="lint tool and widget descriptors against the ChatGPT rules")
    check.add_argument("--url", help="check a running server's /mcp URL instead of this one")
    users = sub.add_parser("users", help="local accounts: create, list, disable, enable")
    users.add_argument("action", choices=["create", "list", "disable", "enable"])
    users.add_argument("username", nargs="?")
    users.add_argument("--name", help="display name (create)")
    users.add_argument("--email", help="email address (create)")
    users.add_argument("--password-stdin", action="store_true", help="read the password from stdin (create)")
    clients = sub.add_parser("clients", help="pre-register an OAuth client")
    clients.add_argument("action", choices=["create"])
    clients.add_argument("--name", required=True)
    clients.add_argument("--redirect-uri", action="append", required=True, help="exact redirect URI (repeatable)")
    clients.add_argument("--auth-method", default="client_secret_basic",
                         choices=["client_secret_basic", "client_secret_post", "private_key_jwt", "none"])
    clients.add_argument("--scope", help="space-separated scopes the client may ask for (default: any)")
    clients.add_argument("--jwks-uri", help="where its public keys are (private_key_jwt)")
    args = parser.parse_args(argv)
    if args.command == "users" and args.action != "list" and not args.username:
        parser.error(f"users {args.action} needs a USERNAME")
    args.label = args.command
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.command == "serve" and (lines := observability_refusals()):
        for line in lines:
            print(line, file=sys.stderr)
        return 2

    from alembic.util.exc import CommandError
    from sqlalchemy.exc import DBAPIError

    from app.auth.accounts import AccountError
    from app.auth.keys import KeyMaterialError
    from app.db.errors import DatabaseNotMigrated, DatabaseUnavailable, is_outage
    from app.db.migrate import MigrationError
    from app.limits import SharedStoreRefused
    from app.logging import configure_logging
    from app.main import FeatureError, StartupRefused, settings_or_exit
    from app.mcp.registry import RegistryError
    from app.storage import StorageError

    settings = settings_or_exit()
    if args.command != "serve":
        # One-shot commands report their own outcome in one line; only errors add log lines.
        configure_logging(settings.log_format, "error")
    handler = {"serve": _serve, "migrate": _migrate, "revision": _revision, "seed": _seed, "check": _check,
               "users": _users, "clients": _clients, "feature": _feature_command}
    try:
        return handler[args.command](args, settings)
    except (FeatureError, RegistryError, MigrationError, CommandError, DatabaseUnavailable, DatabaseNotMigrated,
            StartupRefused, KeyMaterialError, AccountError, StorageError, SharedStoreRefused) as exc:
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
