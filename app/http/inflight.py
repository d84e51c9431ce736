"""Requests in flight, capped per client address and in all, before any body is read.

A request holds memory from its head to its last byte out: its body while it arrives (up to
``APP_MAX_BODY_BYTES``), the copies the stack makes of it, what is decoded from it. A client that
opens many connections and sends each body slowly holds all of that for as long as the body
deadline lets it. So each worker serves at most ``total`` requests at once, and at most
``per_client`` from one client address (counted as the limits count it: IPv4, or an IPv6 /64).
Large bodies are counted too: a request declaring more than ``SMALL_BODY`` (a tool call is a few
hundred bytes) reserves it (a chunked one: the largest body taken), and those bodies stay within
``body_bytes``, half of it from one client. So a few clients holding large bodies leave the small
requests everyone else sends alone, and small requests are bounded by the counts. Past any cap
the request is answered at once ``503`` with ``Retry-After`` and ``Connection: close``, its body
never read. ``docs/lifecycle.md`` gives the memory this bounds.

Health probes (and the metrics scrape) are never counted nor refused: a caller filling the caps
must not pull the pod out of rotation. The counts are this worker's: what they protect is this
process's memory (what a caller may do across the fleet is counted in ``app.limits``).
"""

from __future__ import annotations

import json
from collections import Counter

import structlog
from starlette.types import ASGIApp, Receive, Scope, Send

from app.limits.caller import address_key

log = structlog.get_logger("app.http")
# Health probes, and the scrape that shows what an attack does (it answers its scrapers only).
PROBES = frozenset({"/healthz", "/readyz", "/metrics"})
SMALL_BODY = 16 * 1024  # counted by the number of requests, not reserved
RETRY_AFTER_S = 2
# The same words for every cap: behind ChatGPT, "your address" would be OpenAI's. The log line
# (http.busy) names the cap.
BUSY_MESSAGE = f"The server is busy; try again in {RETRY_AFTER_S} s."


class InFlight:
    def __init__(
        self, app: ASGIApp, *, total: int, per_client: int, body_bytes: int, max_body: int
    ) -> None:
        self.app = app
        self.total = total
        self.per_client = per_client
        self.body_bytes = max(
            body_bytes, max_body
        )  # room for the largest body, from one client too
        self.client_body_bytes = max(body_bytes // 2, max_body)
        self.max_body = max_body
        self.running = self.reserved = 0
        self.by_client: Counter[str] = Counter()
        self.reserved_by_client: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PROBES:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        key = address_key(client[0] if client else None)
        body = self._body_of(scope)
        if self.running >= self.total or self.reserved + body > self.body_bytes:
            await self._refuse(scope, send, key, "all")
            return
        if (
            self.by_client[key] >= self.per_client
            or self.reserved_by_client[key] + body > self.client_body_bytes
        ):
            await self._refuse(scope, send, key, "client")
            return
        self.running += 1
        self.reserved += body
        self.by_client[key] += 1
        self.reserved_by_client[key] += body
        try:
            await self.app(scope, receive, send)
        finally:
            self.running -= 1
            self.reserved -= body
            self.by_client[key] -= 1
            self.reserved_by_client[key] -= body
            if not self.by_client[key]:
                del self.by_client[key], self.reserved_by_client[key]

    def _body_of(self, scope: Scope) -> int:
        """The large body this request may bring: as declared (a larger one is refused 413 unread),
        the largest taken when chunked; 0 for a small one or none. Every header counts, the worst
        read: h11 takes ``Content-Length: 1`` with ``Transfer-Encoding: chunked`` as chunked."""
        declared = 0
        for name, value in scope["headers"]:
            if name == b"transfer-encoding":
                return self.max_body
            if name == b"content-length":
                if not value.isdigit():
                    return self.max_body
                declared = max(declared, int(value))
        return 0 if declared <= SMALL_BODY else min(declared, self.max_body)

    async def _refuse(self, scope: Scope, send: Send, key: str, cap: str) -> None:
        log.info("http.busy", cap=cap, peer=key, path=scope["path"])
        if scope["path"].rstrip("/") == "/mcp":  # as the admission's other refusals: JSON-RPC
            body = json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": BUSY_MESSAGE}}
            ).encode()
            kind = b"application/json"
        else:
            body, kind = BUSY_MESSAGE.encode() + b"\n", b"text/plain; charset=utf-8"
        await send(
            {
                "type": "http.response.start",
                "status": 503,
                "headers": [
                    (b"content-type", kind),
                    (b"content-length", str(len(body)).encode()),
                    (b"retry-after", str(RETRY_AFTER_S).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
