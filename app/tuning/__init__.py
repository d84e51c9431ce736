"""Speed-ups: what exists only to make a request cheaper, in one package that can be deleted.

The core runs on stock parts (uvicorn's own protocol, the SDK's transport, anyio's threads) and keeps
every protection without this package. When it is installed and ``APP_TUNING`` is on (the default),
the composition root (``app.parts.tuning``) installs what ``Tuning`` hands over, each piece unless
``APP_TUNING`` lists others:

- ``lane``: plain JSON-RPC exchanges answered in the ASGI task instead of by the SDK's transport
  (``lane.py``);
- ``protocol``: uvicorn's httptools protocol for ``serve`` instead of h11, with the deadlines stock
  uvicorn lacks (``protocol.py``);
- ``threads``: database calls on a fixed set of threads whose results reach the loop in batches,
  instead of anyio's hop (``threads.py``);
- ``route``: ``POST /mcp`` straight to its endpoint, past Starlette's router (``shortcut.py``);
- ``settle``: start-up objects out of the cyclic collector's reach.

Each one's measured gain (the same run, with and without): ``docs/performance.md``. Deleting this
folder (and ``tests``' modules marked ``tuning``) leaves a server that passes the core suite; this
is the only place that subclasses or reads the internals of uvicorn or the SDK.
"""

from __future__ import annotations

import gc
import resource
from collections.abc import Collection

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.routing import Route
from starlette.types import ASGIApp

from app.db.database import Hops
from app.http.serving import ProtocolFactory
from app.mcp.admission import Lane
from app.settings import TUNING_PIECES, Settings
from app.tuning.lane import SingleExchangeLane
from app.tuning.protocol import Connections, Deadlines, deadline_protocol
from app.tuning.shortcut import Shortcut
from app.tuning.threads import ThreadLane


class Tuning:
    """What the composition root installs from this package: the pieces named (APP_TUNING)."""

    def __init__(self, pieces: Collection[str] = TUNING_PIECES) -> None:
        self.pieces = frozenset(pieces)
        self.hops: Hops | None = ThreadLane if "threads" in self.pieces else None

    def lane(self, manager: StreamableHTTPSessionManager) -> Lane | None:
        return SingleExchangeLane(manager) if "lane" in self.pieces else None

    def http_protocol(self, settings: Settings) -> ProtocolFactory | None:
        if "protocol" not in self.pieces:
            return None
        return deadline_protocol(
            Deadlines(header=settings.http_header_timeout, body=settings.http_body_timeout,
                      send=settings.http_send_timeout),
            Connections(most=connection_cap(settings.http_max_connections),
                        requests=settings.http_connection_requests,
                        lifetime=settings.http_connection_lifetime))

    def route(self, app: ASGIApp, mcp: Route) -> ASGIApp:
        return Shortcut(app, mcp) if "route" in self.pieces else app

    def settle(self) -> None:
        """Once a worker has started: everything built so far lives as long as the worker, so it leaves the
        collector's full passes, which otherwise walk it again and again under load (p99 pauses)."""
        global _settled
        if "settle" in self.pieces and not _settled:
            _settled = True
            gc.collect()  # start-up garbage goes now, not into the frozen set
            gc.freeze()


_settled = False
FD_RESERVE = 100  # files a worker opens itself: database pool, Redis, analysis processes, fetches


def connection_cap(wanted: int) -> int:
    """APP_HTTP_MAX_CONNECTIONS, within what this process may open: past its file limit, every new
    connection and every file the server opens itself (a database connection) would fail."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(2, min(wanted, soft - FD_RESERVE))
