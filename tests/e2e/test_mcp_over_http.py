"""The real server's HTTP stack, over real HTTP, with the SDK client in both protocol modes and raw JSON-RPC.

The server is tests/e2e/probe_server.py: serve's stack with the discovered features plus a test-only one, and
these tests call only the test-only tools, so they hold in a fork that deleted every demo. The demos' own
calls over HTTP are in test_demos_over_http.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest
from mcp.client import Client

from app.db.database import READINESS_REUSE_S
from tests.e2e.server import LiveServer

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
JSON_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2025-06-18"}


@pytest.fixture(scope="module")
def live_server(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """This module's server: the probe server (the session's live_server is `python -m app serve`)."""
    server = LiveServer(database_url, tmp_path_factory.mktemp("probe-logs") / "server.log",
                        module="tests.e2e.probe_server").start()
    yield server
    server.stop()


TOO_LARGE = {"jsonrpc": "2.0", "id": None,
             "error": {"code": -32600, "message": "Request body too large (limit: 4194304 bytes)"}}


def rpc(server: LiveServer, method: str, params: dict | None = None, headers: dict | None = None,
        content: bytes | None = None) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return httpx.post(server.mcp_url, json=None if content else body, content=content,
                      headers=headers or JSON_HEADERS, timeout=10)


@pytest.mark.parametrize(("mode", "negotiated"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
async def test_both_protocol_modes_list_every_tool_with_its_widget_metadata(live_server: LiveServer, mode: str,
                                                                           negotiated: str):
    async with Client(live_server.mcp_url, mode=mode) as client:
        assert client.session.protocol_version == negotiated  # "auto" really took the sessionless path
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"probe_card", "probe_card_details", "probe_echo", "probe_notes"} <= set(tools)
    card = tools["probe_card"].meta or {}
    assert card["ui"]["resourceUri"] == card["openai/outputTemplate"]
    assert card["ui"]["resourceUri"].startswith("ui://widget/probe-")
    assert tools["probe_card_details"].meta["ui"]["visibility"] == ["app"]
    assert "ui" not in (tools["probe_echo"].meta or {})


def test_chatgpt_octet_stream_post_with_any_accept_is_served(live_server: LiveServer):
    body = b'{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}'
    resp = rpc(live_server, "", content=body,
               headers={"content-type": "application/octet-stream", "accept": "*/*",
                        "mcp-protocol-version": "2025-06-18"})
    assert resp.status_code == 200
    assert resp.json()["id"] == 7 and resp.json()["result"]["tools"]


def test_tools_list_restores_top_level_security_schemes_on_the_wire(live_server: LiveServer):
    tools = rpc(live_server, "tools/list").json()["result"]["tools"]
    notes = next(t for t in tools if t["name"] == "probe_notes")
    assert notes["securitySchemes"] == notes["_meta"]["securitySchemes"] == [
        {"type": "noauth"}, {"type": "oauth2", "scopes": ["probe.read"]}]


def test_a_foreign_host_header_is_refused_with_421(live_server: LiveServer):
    resp = rpc(live_server, "tools/list", headers={**JSON_HEADERS, "host": "evil.example"})
    assert resp.status_code == 421


def test_an_oversized_body_is_refused_with_413(live_server: LiveServer):
    resp = rpc(live_server, "", content=b"{" + b" " * (5 * 1024 * 1024) + b"}")
    assert resp.status_code == 413 and resp.headers["content-type"] == "application/json"
    assert resp.json() == TOO_LARGE


def test_an_oversized_chunked_body_is_refused_with_413_not_a_500(live_server: LiveServer):
    def chunks():  # no Content-Length: the limit must be enforced while the body streams in
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
        for _ in range(80):
            yield b"x" * 65536
        yield b'"}}'

    resp = httpx.post(live_server.mcp_url, content=chunks(), headers=JSON_HEADERS, timeout=10)
    assert resp.status_code == 413 and resp.json() == TOO_LARGE
    assert "content-length" not in resp.request.headers


def test_calling_an_unknown_tool_reports_it_by_name(live_server: LiveServer):
    result = rpc(live_server, "tools/call", {"name": "no_such_tool", "arguments": {}}).json()["result"]
    assert result["isError"] is True
    assert [c["text"] for c in result["content"]] == [
        "There is no tool named “no_such_tool” here.",
        "Call tools/list to see the tools this server has, and use one of those."]


def test_out_of_range_arguments_come_back_as_a_tool_error_naming_the_field(live_server: LiveServer):
    payload = rpc(live_server, "tools/call", {"name": "probe_echo", "arguments": {"text": "x" * 1001}}).json()
    assert payload["result"]["isError"] is True
    assert "text" in payload["result"]["content"][0]["text"]


def test_malformed_json_gets_a_parse_error_not_a_500(live_server: LiveServer):
    resp = rpc(live_server, "", content=b'{"jsonrpc": "2.0", "id": 1, "method": ')
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == -32700


def test_a_trailing_slash_on_the_mcp_url_is_served_not_redirected(live_server: LiveServer):
    resp = httpx.post(live_server.mcp_url + "/", json={"jsonrpc": "2.0", "id": 5, "method": "ping"},
                      headers=JSON_HEADERS, timeout=10)
    assert resp.status_code == 200 and resp.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_capabilities_are_the_same_truth_on_both_protocol_paths(live_server: LiveServer, version: str):
    if version == "2026-07-28":
        headers = {**JSON_HEADERS, "mcp-protocol-version": version, "mcp-method": "server/discover"}
        params = {"_meta": {"io.modelcontextprotocol/protocolVersion": version,
                            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                            "io.modelcontextprotocol/clientCapabilities": {}}}
        result = rpc(live_server, "server/discover", params, headers=headers).json()["result"]
    else:
        result = rpc(live_server, "initialize", {"protocolVersion": version, "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "1"}}).json()["result"]
    caps = result["capabilities"]
    assert caps["resources"] == {"subscribe": False, "listChanged": False}
    assert caps["tools"] == {"listChanged": False}
    sub = rpc(live_server, "resources/subscribe", {"uri": "ui://widget/x.html"}).json()
    assert sub["error"]["code"] == -32601


def test_health_and_readiness_probes_answer(live_server: LiveServer):
    assert httpx.get(f"{live_server.base_url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{live_server.base_url}/readyz").json()["database"] == "ok"


def test_thirty_two_concurrent_readiness_probes_are_all_ready(live_server: LiveServer):
    time.sleep(READINESS_REUSE_S)  # no answer to reuse: the 32 arrive while one check is in flight

    async def probes():
        async with httpx.AsyncClient(base_url=live_server.base_url, timeout=10,
                                     limits=httpx.Limits(max_connections=32)) as client:
            return await asyncio.gather(*(client.get("/readyz") for _ in range(32)))

    answers = asyncio.run(probes())
    assert [(r.status_code, r.json()["database"]) for r in answers] == [(200, "ok")] * 32


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_handshake_clients_get_the_version_they_asked_for(live_server: LiveServer, version: str):
    resp = rpc(live_server, "initialize", {"protocolVersion": version, "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "1"}},
               headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    assert resp.json()["result"]["protocolVersion"] == version
    listed = rpc(live_server, "tools/list", headers={**JSON_HEADERS, "mcp-protocol-version": version})
    assert listed.status_code == 200 and listed.json()["result"]["tools"]


def test_sessionless_2026_clients_are_served_without_a_handshake(live_server: LiveServer):
    envelope = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "probe_echo"}
    resp = rpc(live_server, "tools/call", {"name": "probe_echo", "arguments": {"text": "hi"}, "_meta": envelope},
               headers=headers)
    result = resp.json()["result"]
    assert result["resultType"] == "complete"
    assert result["structuredContent"] == {"text": "hi"}
    assert "mcp-session-id" not in resp.headers


def test_a_get_stream_is_refused_with_405_instead_of_hanging(live_server: LiveServer):
    resp = httpx.get(live_server.mcp_url, headers={"accept": "text/event-stream"}, timeout=5)
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"
