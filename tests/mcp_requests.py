"""What the in-process tests of ``POST /mcp`` send, and a transport that counts what reaches the SDK: the headers
of each protocol era, the 2026-07-28 envelope, a tools/call on either era, a post of a body as given."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import httpx
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from app.mcp.admission import Admission, current

# Host and Origin are not checked: the in-process clients send whatever host their base URL names.
NO_REBINDING_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)
LEGACY = {"content-type": "application/json", "accept": "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18"}
MODERN = {**LEGACY, "mcp-protocol-version": "2026-07-28"}
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}


def call(name: str, arguments: dict, id_: int | str = 1, meta: dict | None = None) -> dict:
    params: dict = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def modern_call(name: str, arguments: dict, id_: int | str = 1) -> tuple[dict[str, str], dict]:
    """The headers and body of a 2026-07-28 tools/call (routing headers, the envelope in ``_meta``)."""
    return {**MODERN, "mcp-method": "tools/call", "mcp-name": name}, call(name, arguments, id_, dict(ENVELOPE))


async def post(client: httpx.AsyncClient, body: object,
               headers: dict[str, str] | list[tuple[str, str]] | None = None) -> httpx.Response:
    """``body`` as given (bytes) or as JSON, with the handshake era's headers unless others are given."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await client.post("/mcp", content=content, headers=headers if headers is not None else LEGACY)


@dataclass
class CountingTransport:
    """The SDK's transport, counting the requests that reach it and the admission each was handed down."""

    app: ASGIApp
    calls: int = 0
    admissions: list[Admission | None] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        self.admissions.append(current())
        await self.app(scope, receive, send)
