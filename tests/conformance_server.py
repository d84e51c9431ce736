"""The server the MCP conformance suite is pointed at: ``serve``'s HTTP stack (its workers, the
admission, the lane, the middleware) with the discovered features plus the test-only fixture
feature the suite calls by name (tests/conformance_feature.py).

    python -m tests.conformance_server --port P [--workers N]

reads its settings from the environment, as ``serve`` does. How to run the suite against it:
docs/development.md, "The MCP conformance suite".
"""

from __future__ import annotations

import sys


def create_app():
    """The uvicorn factory each worker imports."""
    from app.main import create_app_from_env, discover_features
    from tests.conformance_feature import CONFORMANCE

    return create_app_from_env(features=[*discover_features(), CONFORMANCE])


def main(argv: list[str] | None = None) -> int:
    from tests.e2e.probe_server import serve

    return serve("tests.conformance_server:create_app", argv)


if __name__ == "__main__":
    sys.exit(main())
