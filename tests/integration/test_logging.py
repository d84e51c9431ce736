"""One structured event per JSON-RPC request, with every correlated field; no location, no token."""

from __future__ import annotations

import pytest
from mcp.server.auth.provider import AccessToken
from starlette.testclient import TestClient

from app.auth.schemes import oauth2
from app.auth.scopes import Scope
from app.feature import Feature
from app.main import create_app
from tests.fakes import StaticTokenVerifier

# Values no timing or id can produce by chance, so their absence from the log means something.
CITY, LATITUDE, TOKEN = "Zzyzx-Marker-City", 12.3456789, "tok-SECRET-0b7e"
META = {
    "openai/widgetSessionId": "ws_123",
    "openai/session": "sess_abc",
    "openai/subject": "subj_42",
    "openai/organization": "org_7",
    "openai/locale": "es-MX",
    "openai/userLocation": {"city": CITY, "latitude": LATITUDE, "longitude": -99.13},
}


def _locked(registry, deps) -> None:
    @registry.tool(name="locked", title="Locked", description="needs an account", read_only=True,
                   destructive=False, open_world=False, security=[oauth2("x.read")])
    async def locked() -> str:
        return "opened"


LOCKED = Feature(name="locked", tools=_locked, scopes=(Scope("x.read", {"en": "Read x"}),))


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_a_tool_call_is_one_correlated_event_and_the_access_log_keeps_to_http(settings, json_log, version):
    verifier = StaticTokenVerifier({TOKEN: AccessToken(token=TOKEN, client_id="chatgpt", scopes=["x.read"],
                                                       subject="acct-7", resource=settings.mcp_url)})
    app = create_app(settings, token_verifier=verifier, features=[LOCKED])
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": version,
               "x-request-id": "req-corr-1", "authorization": f"Bearer {TOKEN}"}
    meta = dict(META)
    if version == "2026-07-28":
        headers |= {"mcp-method": "tools/call", "mcp-name": "locked"}
        meta |= {"io.modelcontextprotocol/protocolVersion": version,
                 "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                 "io.modelcontextprotocol/clientCapabilities": {}}
    with TestClient(app, base_url=settings.base_url) as client:
        resp = client.post("/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "locked", "arguments": {}, "_meta": meta}})
    assert resp.status_code == 200 and not resp.json()["result"].get("isError")
    events = [e for e in json_log() if e.get("request_id") == "req-corr-1"]
    calls = [e for e in events if e["event"] == "mcp.tool_call"]
    http = [e for e in events if e["event"] == "http.request"]
    assert len(calls) == 1 and len(http) == 1
    call = calls[0]
    assert {k: call[k] for k in ("tool", "rpc_method", "protocol_version", "widget_session_id", "openai_session",
                                 "openai_subject", "openai_organization", "locale", "subject", "client_id",
                                 "outcome")} == {
        "tool": "locked", "rpc_method": "tools/call", "protocol_version": version,
        "widget_session_id": "ws_123", "openai_session": "sess_abc", "openai_subject": "subj_42",
        "openai_organization": "org_7", "locale": "es-MX", "subject": "acct-7", "client_id": "chatgpt",
        "outcome": "ok"}
    assert isinstance(call["duration_ms"], float) and call["duration_ms"] >= 0
    assert set(http[0]) - {"timestamp", "level", "logger", "pid"} == {
        "event", "request_id", "method", "path", "status", "duration_ms", "client"}
    assert (http[0]["method"], http[0]["path"], http[0]["status"]) == ("POST", "/mcp", 200)
    assert http[0]["client"] == "testclient"  # the peer as the trusted-proxy rule sees it
    raw = str(json_log())
    assert CITY not in raw and str(LATITUDE) not in raw and "userLocation" not in raw and TOKEN not in raw


@pytest.mark.parametrize(("meta", "status", "answered"), [({"openai/locale": "en-US"}, 200, None),
                                                          (None, 401, "http")], ids=["chatgpt", "another-client"])
def test_a_refused_call_is_logged_as_auth_required_however_it_is_answered(settings, json_log, meta, status,
                                                                           answered):
    params = {"name": "locked", "arguments": {}, **({"_meta": meta} if meta else {})}
    with TestClient(create_app(settings, features=[LOCKED]), base_url=settings.base_url) as client:
        response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                               headers={"accept": "application/json, text/event-stream",
                                        "mcp-protocol-version": "2025-06-18", "x-request-id": "req-locked"})
    assert response.status_code == status
    calls = [e for e in json_log() if e.get("request_id") == "req-locked" and e["event"] == "mcp.tool_call"]
    assert [(e["tool"], e["outcome"], e.get("answered")) for e in calls] == [("locked", "auth_required", answered)]
    assert "subject" not in calls[0]
