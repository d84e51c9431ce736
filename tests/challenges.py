"""The two answers to a tools/call the caller may not use (app/auth/challenge.py), for the tests that check both:
ChatGPT's requests carry ``CHATGPT_META`` and get the isError result; ``plain_call`` is any other client's."""

from __future__ import annotations

import re
from typing import Any

import httpx

# What ChatGPT's requests carry: openai/* request _meta (its locale, here).
CHATGPT_META = {"openai/locale": "en-US"}
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}}


def plain_call(mcp_url: str, name: str, arguments: dict[str, Any] | None = None, *, token: str | None = None,
               version: str = "2025-06-18", meta: dict[str, Any] | None = None) -> httpx.Response:
    """A tools/call over HTTP, as a client that is not ChatGPT sends it unless ``meta`` says otherwise
    (``CHATGPT_META``); on 2026-07-28 with the headers and _meta that protocol requires."""
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": version}
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    merged = dict(meta or {})
    if version == "2026-07-28":
        headers |= {"mcp-method": "tools/call", "mcp-name": name}
        merged |= MODERN_META
    if merged:
        params["_meta"] = merged
    if token:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                      headers=headers, timeout=15)


def bearer_params(header: str) -> dict[str, str]:
    assert header.startswith("Bearer "), header
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', header))


def assert_http_challenge(response: httpx.Response, base_url: str, scope: str, *, signed_in: bool) -> None:
    """401 with the metadata and scope and no error code (no token sent), or 403 insufficient_scope; ``scope``
    "" for a tool that needs a linked account and no scope (the challenge then names none)."""
    assert response.status_code == (403 if signed_in else 401), response.text
    params = bearer_params(response.headers["www-authenticate"])
    assert params["resource_metadata"] == f"{base_url}/.well-known/oauth-protected-resource/mcp"
    assert params.get("scope", "") == scope  # none for a tool any linked account may use
    if signed_in:
        assert params["error"] == "insufficient_scope"
    else:
        assert set(params) == {"resource_metadata", *(["scope"] if scope else [])}
