"""Command line: ``python -m app serve | migrate | check``."""

from __future__ import annotations

import argparse
import sys

from app.settings import Settings


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from app.db.migrate import upgrade
    from app.logging import configure_logging

    configure_logging(settings.log_format, settings.log_level)
    if settings.migrate_on_start:
        upgrade(settings.database_url)  # once, before workers fork
    uvicorn.run(
        "app.main:create_app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_config=None,  # keep our structlog configuration
        proxy_headers=True,
        forwarded_allow_ips=args.forwarded_allow_ips,
        timeout_graceful_shutdown=10,
    )
    return 0


def _migrate(args: argparse.Namespace, settings: Settings) -> int:
    from app.db.migrate import downgrade, upgrade

    if args.downgrade:
        downgrade(settings.database_url, args.downgrade)
    else:
        upgrade(settings.database_url, args.revision)
    print(f"migrated {settings.database_url.split('@')[-1]}")
    return 0


def _check(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    from app.logging import configure_logging
    from app.mcp.check import collect, lint

    configure_logging(settings.log_format, "WARNING")

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    serve.add_argument("--forwarded-allow-ips", default="127.0.0.1")
    migrate = sub.add_parser("migrate", help="apply database migrations")
    migrate.add_argument("--revision", default="heads")
    migrate.add_argument("--downgrade", metavar="REVISION")
    check = sub.add_parser("check", help="lint tool and widget descriptors against the ChatGPT rules")
    check.add_argument("--url", help="check a running server's /mcp URL instead of this one")
    args = parser.parse_args(argv)
    settings = Settings()
    handler = {"serve": _serve, "migrate": _migrate, "check": _check}[args.command]
    return handler(args, settings)


if __name__ == "__main__":
    sys.exit(main())
