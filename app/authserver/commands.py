"""``python -m app users ...`` and ``python -m app clients create``: the authorization server's own commands,
registered by the CLI only while this package is installed."""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import anyio

from app.auth.scopes import ScopeCatalog
from app.authserver.accounts import (
    AccountError,
    AccountRepository,
    create_account,
    delete_account,
    normalise_username,
    set_disabled,
)
from app.authserver.clients import AUTH_METHODS, ClientMetadataError, register_client, validate_metadata
from app.authserver.models import Account
from app.authserver.settings import AuthServerSettings
from app.authserver.wiring import announce_account_revoked
from app.broadcast import open_broadcast
from app.command import CommandLineError
from app.db import Database, UnitOfWork
from app.settings import Settings

COMMANDS = ("users", "clients")
# What the features keep for an account, deleted with it (app.parts.forget_everywhere), opened
# for the command that needs it.
Forgetting = Callable[[], AbstractContextManager[Callable[[UnitOfWork, str], int]]]
Handler = Callable[[argparse.Namespace, Settings, Database, Callable[[], ScopeCatalog], Forgetting],
                   int]


def add_parsers(sub: argparse._SubParsersAction) -> dict[str, Handler]:
    users = sub.add_parser("users", help="local accounts: create, list, disable, enable, delete")
    users.add_argument("action", choices=["create", "list", "disable", "enable", "delete"])
    users.add_argument("username", nargs="?")
    users.add_argument("--name", help="display name (create)")
    users.add_argument("--email", help="email address (create)")
    users.add_argument("--password-stdin", action="store_true", help="read the password from stdin (create)")
    users.add_argument("--yes", action="store_true",
                       help="delete: the account and everything kept for it, for good")
    clients = sub.add_parser("clients", help="pre-register an OAuth client")
    clients.add_argument("action", choices=["create"])
    clients.add_argument("--name", required=True)
    clients.add_argument("--redirect-uri", action="append", required=True, help="exact redirect URI (repeatable)")
    clients.add_argument("--auth-method", default="client_secret_basic",
                         choices=["client_secret_basic", "client_secret_post", "private_key_jwt", "none"])
    clients.add_argument("--scope", help="space-separated scopes the client may ask for (default: any)")
    clients.add_argument("--jwks-uri", help="where its public keys are (private_key_jwt)")
    return {"users": _users, "clients": _clients}


def review_sign_in(settings: Settings, account: str | None) -> Callable[[Any, str, str, str], str]:
    """For ``python -m app listing``: how its linked test cases get a token
    (app.authserver.review)."""
    from app.authserver.review import credentials, sign_in

    def signed_in(http: Any, base_url: str, resource: str, scope: str) -> str:
        username, password = credentials(settings, account, base_url)
        return sign_in(http, base_url, resource, scope, username, password)

    return signed_in


def usage_error(args: argparse.Namespace) -> str | None:
    if args.command == "users" and args.action != "list" and not args.username:
        return f"users {args.action} needs a USERNAME"
    if args.command == "users" and args.action == "delete" and not args.yes:
        return ("users delete deletes the account and everything the app keeps for it, for "
                "good: add --yes")
    return None


def _users(args: argparse.Namespace, settings: Settings, db: Database,
           _: Callable[[], ScopeCatalog], forgetting: Forgetting) -> int:
    if args.action == "delete":  # a person's request, or an account that cannot sign in
        with forgetting() as forget:
            username, account_id, kept = db.write_sync(lambda uow: _deleted(uow, args.username,
                                                                            forget))
        told = anyio.run(announce_account_revoked,
                         open_broadcast(settings.redis_url, settings.redis_prefix), account_id)
        print(f"deleted {username} ({account_id}) with {kept} items kept for it; its tokens stop "
              + ("working at once" if told else "working within APP_OAUTH_GRANT_CACHE_TTL"))
    elif args.action == "create":
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
        # The servers' caches of its grants: told through Redis, or they find out within their TTL.
        broadcast = open_broadcast(settings.redis_url, settings.redis_prefix)
        told = anyio.run(announce_account_revoked, broadcast, account_id)
        when = ("at once on every server sharing APP_REDIS_URL" if told else
                f"within {AuthServerSettings().oauth_grant_cache_ttl:g} s on every server (APP_OAUTH_GRANT_CACHE_TTL)"
                + ("; Redis could not be told" if broadcast.shared else ""))
        print(f"{args.action}d {username} ({account_id}); "
              + (f"its tokens stop working {when}, for good" if args.action == "disable"
                 else "it can sign in again; its tokens of before stay revoked (it links again)"))
    else:
        rows = db.read_sync(lambda uow: [
            (a.username, a.id, "disabled" if a.disabled_at else "demo" if a.is_demo else "active", a.email or "")
            for a in uow.repository(AccountRepository).all()])
        for row in rows:
            print("\t".join(row))
    return 0


def _deleted(uow: UnitOfWork, username: str,
             forget: Callable[[UnitOfWork, str], int]) -> tuple[str, str, int]:
    """What /account's deletion does, for the operator: one transaction."""
    accounts = uow.repository(AccountRepository)
    account = accounts.by_username(username)
    if account is None or account.username.startswith("deleted-"):
        raise AccountError(f"no account named {normalise_username(username)!r}")
    return account.username, account.id, delete_account(uow, account.id, forget)


def _ids(account: Account) -> tuple[str, str]:
    return account.username, account.id


def _clients(args: argparse.Namespace, _: Settings, db: Database,
             catalog: Callable[[], ScopeCatalog], __: Forgetting) -> int:
    data = {"client_name": args.name, "redirect_uris": args.redirect_uri,
            "token_endpoint_auth_method": args.auth_method, **({"scope": args.scope} if args.scope else {}),
            **({"jwks_uri": args.jwks_uri} if args.jwks_uri else {})}
    try:
        metadata = validate_metadata(data, catalog(), auth_methods=AUTH_METHODS, default_auth="client_secret_basic")
    except ClientMetadataError as exc:
        print(f"clients: {exc}", file=sys.stderr)
        return 2
    row, secret = db.write_sync(lambda uow: register_client(uow, metadata, kind="static"))
    print(f"client_id: {row.client_id}")
    if secret:
        print(f"client_secret: {secret}   (shown once; only its hash is stored)")
    return 0
