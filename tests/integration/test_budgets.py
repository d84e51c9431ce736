"""Tool budgets and the bound caller on every way a tools/call reaches the server: the single-exchange lane
(2025-era), the SDK's own transport (the lane off, 2025-06-18 and 2025-11-25), and the sessionless 2026-07-28
path, over real HTTP with the trusted-proxy rule in front. A probe feature of the test's own (no demo), so the
test survives any fork."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp.server.auth.provider import AccessToken

from app.auth.schemes import NOAUTH
from app.feature import Feature
from app.limits import current_caller
from app.main import create_app
from app.settings import load_settings
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}}
PATHS = [(True, "2025-06-18"), (False, "2025-06-18"), (False, "2025-11-25"), (True, "2026-07-28")]


def _probe(registry, deps) -> None:
    @registry.tool(name="probe_budgeted", title="Budgeted", description="costs a unit", read_only=True,
                   destructive=False, open_world=False, security=[NOAUTH], budget="2/minute")
    async def probe_budgeted() -> str:
        return "ran"

    @registry.tool(name="probe_caller", title="Caller", description="who is counted", read_only=True,
                   destructive=False, open_world=False, security=[NOAUTH])
    async def probe_caller() -> str:
        caller = current_caller()
        return json.dumps(None if caller is None else [caller.account, caller.address, caller.hint])


PROBE = Feature(name="probe", tools=_probe)


def call(base: str, version: str, name: str, forwarded_for: str, token: str | None = None,
         hint: str | None = None) -> dict[str, Any]:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": version,
               "x-forwarded-for": forwarded_for}
    params: dict[str, Any] = {"name": name, "arguments": {}}
    meta: dict[str, Any] = {"openai/subject": hint} if hint else {}
    if version == "2026-07-28":
        headers |= {"mcp-method": "tools/call", "mcp-name": name}
        meta |= MODERN_META
    if meta:
        params["_meta"] = meta
    if token:
        headers["authorization"] = f"Bearer {token}"
    response = httpx.post(f"{base}/mcp", headers=headers, timeout=30,
                          json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.fixture(params=PATHS, ids=[f"{v}{'' if lane else ', lane off'}" for lane, v in PATHS])
def path(request: pytest.FixtureRequest, database_url: str):
    lane, version = request.param

    def build(base_url: str):
        verifier = StaticTokenVerifier({"alice": AccessToken(token="alice", client_id="chatgpt", scopes=[],
                                                             subject="acct-alice", resource=f"{base_url}/mcp")})
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json",
                                 tuning=lane, _env_file=None)
        return create_app(settings, token_verifier=verifier, features=[PROBE])

    with serving(build) as base:
        yield base, version


def test_the_caller_is_bound_for_the_tool_on_every_protocol_path(path):
    base, version = path
    seen = [json.loads(call(base, version, "probe_caller", *args)["content"][0]["text"]) for args in (
        ("198.51.100.1",), ("6.6.6.6, 198.51.100.2", None, "openai-user-1"), ("198.51.100.1", "alice"))]
    assert seen == [[None, "198.51.100.1", None], [None, "198.51.100.2", "openai-user-1"],
                    ["acct-alice", "198.51.100.1", None]]


def test_budgets_count_the_right_caller_on_every_protocol_path(path):
    base, version = path
    anonymous = [call(base, version, "probe_budgeted", "198.51.100.1") for _ in range(3)]
    assert [bool(r.get("isError")) for r in anonymous] == [False, False, True]
    # The model's block (the last): the person's says only that it was not done, and when to retry.
    said = anonymous[-1]["content"][-1]["text"]
    assert "probe_budgeted was not run: this caller used its budget (2 per minute)" in said
    assert not call(base, version, "probe_budgeted", "198.51.100.2").get("isError")  # another address
    linked = [call(base, version, "probe_budgeted", "198.51.100.1", "alice") for _ in range(3)]
    assert [bool(r.get("isError")) for r in linked] == [False, False, True]  # the account, counted apart
