"""Tool budgets and the bound caller on every way a tools/call reaches the server: the single-exchange lane
(2025-era), the SDK's own transport (the lane off, 2025-06-18 and 2025-11-25), and the sessionless 2026-07-28
path, over real HTTP with the trusted-proxy rule in front."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from mcp.server.auth.provider import AccessToken

from app.features.files.ingest import quota_message
from app.limits import Check, OverLimit, per_seconds
from app.main import create_app
from app.settings import load_settings
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}}
PATHS = [(True, "2025-06-18"), (False, "2025-06-18"), (False, "2025-11-25"), (True, "2026-07-28")]


def call(base: str, version: str, name: str, arguments: dict[str, Any], forwarded_for: str,
         token: str | None = None) -> dict[str, Any]:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": version,
               "x-forwarded-for": forwarded_for}
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if version == "2026-07-28":
        headers |= {"mcp-method": "tools/call", "mcp-name": name}
        params["_meta"] = MODERN_META
    if token:
        headers["authorization"] = f"Bearer {token}"
    response = httpx.post(f"{base}/mcp", headers=headers, timeout=30,
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.mark.parametrize(("lane", "version"), PATHS)
def test_budgets_count_the_right_caller_on_every_protocol_path(database_url: str, lane: bool, version: str):
    def build(base_url: str):
        verifier = StaticTokenVerifier({"alice": AccessToken(token="alice", client_id="chatgpt", scopes=[],
                                                             subject="acct-alice", resource=f"{base_url}/mcp")})
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json",
                                 mcp_fast_lane=lane, tool_budgets="search=2/minute", _env_file=None)
        return create_app(settings, token_verifier=verifier)

    with serving(build) as base:
        searched = [call(base, version, "search", {"q": "json"}, "198.51.100.1") for _ in range(3)]
        assert [bool(r.get("isError")) for r in searched] == [False, False, True]
        assert "this caller used its budget (2 per minute)" in searched[-1]["content"][0]["text"]
        assert not call(base, version, "search", {"q": "json"}, "198.51.100.2").get("isError")  # another address
        linked = [call(base, version, "search", {"q": "json"}, "198.51.100.1", "alice") for _ in range(3)]
        assert [bool(r.get("isError")) for r in linked] == [False, False, True]  # the account, apart
        logged = [call(base, version, "log_widget_event", {"event": "widget.mount"}, "203.0.113.1")
                  ["structuredContent"]["outcome"] for _ in range(31)]
        assert logged == ["logged"] * 30 + ["rate_limited"]  # the caller is bound inside the tool too
        other = call(base, version, "log_widget_event", {"event": "widget.mount"}, "203.0.113.2")
        assert other["structuredContent"]["outcome"] == "logged"


def over(cost: int, amount: int = 3_000_000, retry_after: int = 1800) -> OverLimit:
    return OverLimit(Check("files.anonymous_bytes", per_seconds(amount, 3600), "k", "this caller", cost), retry_after)


def test_the_quota_refusal_says_when_to_retry_or_that_the_file_never_fits():
    used_up = quota_message(over(900_000))
    assert used_up == ("The file was not kept: anonymous uploads from this caller may add at most 3 MB every 1 hour, "
                       "and that is used up. Retry in 30 min, or ask the user to connect (sign in to) this app, "
                       "whose library keeps files without this quota.")
    too_big = quota_message(over(4_000_000))
    assert too_big.startswith("The file was not kept: it is 4 MB, and anonymous uploads from this caller may add "
                              "at most 3 MB every 1 hour. To analyse it, ask the user to connect")
    assert "Retry" not in too_big
