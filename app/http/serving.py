"""The HTTP server around the app: stock uvicorn, bounded by its own options, and a SIGTERM that drains,
writes the log and exits 0.

What bounds a client here (``docs/lifecycle.md``, "Slow clients"):

- uvicorn's h11 protocol refuses a request head still unfinished past ``MAX_HEAD_BYTES`` (400,
  connection closed: ``h11_max_incomplete_event_size``), and the app one that arrived whole past it
  (431, ``app.http.bounds.ClientBounds``); an idle kept-alive connection is closed after
  ``timeout_keep_alive`` seconds;
- a body that does not arrive in time is answered 408 by the app itself
  (``app.http.bounds.ClientBounds``), so any ASGI server gets that deadline;
- a client slow to send its request head, or slow to take in a response, is the front's to cut
  (the ingress or reverse proxy a deployment puts before the app): uvicorn has no deadline for
  either, and the app does not see a request before its head is complete.

The speed-up package (``app/tuning``), when installed, hands ``serve`` a protocol of its own instead
(``protocol`` below): httptools with deadlines for the head and for a client that reads nothing.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

if TYPE_CHECKING:
    from app.settings import Settings

MAX_HEAD_BYTES = 16 * 1024  # a request line and its headers (h11's own default, said once for every protocol)
# What a protocol factory of the speed-up package is: what uvicorn's ``http`` option takes.
ProtocolFactory = Callable[..., Any]


def serve_config(settings: Settings, factory: str, *, host: str, port: int, workers: int,
                 protocol: ProtocolFactory | None = None) -> uvicorn.Config:
    """How ``serve`` runs ``factory`` (a module:callable each worker imports and calls): on uvicorn's own h11
    protocol, or on ``protocol`` (the speed-up package's)."""
    grace = settings.shutdown_grace
    return uvicorn.Config(
        factory,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        # "auto" would take httptools when installed, which bounds no head. uvicorn calls ``http``
        # to make each connection's protocol: its annotation asks for a class, a partial of one
        # (which pickles) works too.
        http=protocol or "h11",  # pyright: ignore[reportArgumentType] (a partial: see above)
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        # WebSockets off: the app serves none, and an upgrade handed to a WebSocket protocol escapes every
        # bound here (one with a body was never answered, and crashed the server's shutdown).
        ws="none",
        log_config=None,  # keep our structlog configuration
        # The app applies APP_TRUSTED_PROXIES itself (app.http.middleware.client_address); uvicorn's own pass
        # would read FORWARDED_ALLOW_IPS from the environment and could apply a second, different rule.
        proxy_headers=False,
        # SIGTERM: stop accepting, give the requests in flight this long, then the lifespan's shutdown.
        # Annotated int, used as asyncio.timeout's delay: a float (APP_SHUTDOWN_GRACE=0.5) works.
        timeout_graceful_shutdown=grace,  # pyright: ignore[reportArgumentType] (a float works)
    )


def run_server(config: uvicorn.Config) -> int:
    """Serve until SIGTERM or SIGINT, drain, and exit 0 with the log written (docker stop, a rolling deploy).

    uvicorn ends its process by re-raising the signal after a graceful shutdown, under the handler there
    was before it started: the default one would kill this process (exit 143) before the log writer
    wrote the last lines. A handler of our own takes that re-raised signal, and serve returns. Workers
    (``--workers N``) are ended by that signal, their log written through by then
    (``app.http.middleware.log_written_through_shutdown``); the supervisor here returns once all have.
    """
    if config.workers > 1:
        supervisor = Multiprocess(config, sockets=[config.bind_socket()])
        supervisor.run()
        # A worker that could not start stops the supervisor: say so in the exit code (restart policies).
        return STARTUP_FAILURE if any(p.exitcode == STARTUP_FAILURE for p in supervisor.processes) else 0
    server = uvicorn.Server(config=config)
    handled = {sig: signal.signal(sig, _already_handled) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()
    finally:
        for sig, handler in handled.items():
            signal.signal(sig, handler)
    return 0 if server.started else STARTUP_FAILURE


def _already_handled(sig: int, frame: Any) -> None:
    """What uvicorn re-raises after its graceful shutdown: the signal has done its work."""
