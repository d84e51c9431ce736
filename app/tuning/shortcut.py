"""``POST /mcp`` straight to its endpoint, past Starlette's router and its exception middleware.

/mcp carries nearly all the traffic; the router would match it (it is the first route) after the
application's error and exception middleware have wrapped the call, which cost about 3% of a request's
samples (``bench/profile.py``). The access log above already turns a crash into a JSON 500 with the
request id, so /mcp loses nothing by skipping them; every other request goes through the router.
"""

from __future__ import annotations

from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send


class Shortcut:
    """Requests that ``route`` matches by path and method go straight to its endpoint; the rest to ``app``."""

    def __init__(self, app: ASGIApp, route: Route) -> None:
        self.app = app
        self.route = route
        self.path = route.path
        self.methods = frozenset(route.methods or ())
        self.endpoint: ASGIApp = route.endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self.path and scope["method"] in self.methods:
            scope["route"] = self.route  # what the router would have set: the access log and traces name it
            await self.endpoint(scope, receive, send)
        else:
            await self.app(scope, receive, send)
