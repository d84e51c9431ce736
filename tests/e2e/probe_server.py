"""The real server (``serve``'s HTTP stack: serve_config, run_server, uvicorn workers) with a test-only feature
in place of the discovered ones, so an end-to-end test depends on no demo and survives any fork.

    python -m tests.e2e.probe_server --port P [--workers N]

reads its settings from the environment as ``serve`` does (LiveServer passes them), and serves the features
discovered in this tree (none in a fork without demos) plus the test-only ``probe`` feature
(tests/e2e/probe_feature.py). Like ``serve``, it prepares the metrics directory before it imports anything that
imports prometheus-client.
"""

from __future__ import annotations

import argparse
import sys


def create_app():
    """The uvicorn factory each worker imports."""
    from app.main import create_app_from_env, discover_features
    from tests.e2e.probe_feature import PROBE

    return create_app_from_env(features=[*discover_features(), PROBE])


def main(argv: list[str] | None = None) -> int:
    return serve("tests.e2e.probe_server:create_app", argv)


def serve(factory: str, argv: list[str] | None = None) -> int:
    """``serve``'s steps for ``factory`` (a module:callable each worker imports)."""
    parser = argparse.ArgumentParser(prog=f"python -m {factory.split(':')[0]}")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    from app.__main__ import observability_refusals

    if lines := observability_refusals():
        print("\n".join(lines), file=sys.stderr)
        return 2

    from app.http.serving import run_server, serve_config
    from app.logging import configure_logging
    from app.main import settings_or_exit
    from app.parts import tuning

    settings = settings_or_exit()
    configure_logging(settings.log_format, settings.log_level)
    speedups = tuning(settings)
    protocol = speedups.http_protocol(settings) if speedups is not None else None
    return run_server(serve_config(settings, factory, host="127.0.0.1", port=args.port,
                                   workers=args.workers, protocol=protocol))


if __name__ == "__main__":
    sys.exit(main())
