"""The soak's server: ``serve``'s HTTP stack (tests/e2e/probe_server.py, its workers and
protocol) with the discovered features and the test-only probe, and an outbound guard whose resolver stalls one
name on purpose: ``stalled.test`` answers nothing for ``SOAK_STALL_S`` seconds, as a silent DNS
server would. Every other name is resolved by the system. The hook is this test module's, handed to
``create_app`` as its guard: nothing in the app can set it.

    python -m tests.e2e.soak_server --port P [--workers N]
"""

from __future__ import annotations

import os
import sys
import time

STALLED = "stalled.test"


def stalling_resolver(host: str, port: int) -> list[str]:
    from app.net.policy import system_resolver

    if host == STALLED:
        time.sleep(float(os.environ.get("SOAK_STALL_S", "8")))
        raise OSError("no answer")
    return list(system_resolver(host, port))


def create_app():
    """The uvicorn factory each worker imports: create_app_from_env's steps, with the stalling
    guard."""
    from app.http.middleware import log_written_through_shutdown
    from app.logging import configure_logging
    from app.main import create_app, discover_features, settings_or_exit
    from app.net.guard import OutboundGuard
    from app.observability.metrics import Metrics
    from tests.e2e.probe_feature import PROBE

    settings = settings_or_exit()
    configure_logging(settings.log_format, settings.log_level)
    guard = OutboundGuard(
        allowlist=settings.outbound_allowlist,
        ports=settings.outbound_ports,
        resolver=stalling_resolver,
    )
    return log_written_through_shutdown(
        create_app(
            settings,
            features=[*discover_features(), PROBE],
            guard=guard,
            metrics=Metrics() if settings.metrics else None,
        )
    )


def main(argv: list[str] | None = None) -> int:
    from tests.e2e import probe_server

    return probe_server.serve("tests.e2e.soak_server:create_app", argv)


if __name__ == "__main__":
    sys.exit(main())
