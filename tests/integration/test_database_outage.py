"""With the database down, probes say so and tools answer with a clear error, never a 500."""

from __future__ import annotations

from starlette.testclient import TestClient

from app.db import Database
from app.main import create_app

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


def _unreachable() -> Database:
    # Port 1 on loopback refuses at once: an outage without waiting for a timeout.
    return Database("postgresql+psycopg://nobody@127.0.0.1:1/none?connect_timeout=2")


def test_readiness_reports_503_while_liveness_stays_ok(settings):
    with TestClient(create_app(settings, _unreachable()), base_url=settings.base_url) as client:
        assert client.get("/healthz").status_code == 200
        ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json() == {"status": "unavailable", "database": "unreachable"}


def test_a_tool_call_during_an_outage_is_a_tool_error_that_says_to_retry(settings):
    with TestClient(create_app(settings, _unreachable()), base_url=settings.base_url) as client:
        resp = client.post("/mcp", headers=HEADERS, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "get_zoo_animals", "arguments": {"count": 2}}})
        listing = client.post("/mcp", headers=HEADERS, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert resp.status_code == 200
    result = resp.json()["result"]
    assert result["isError"] is True
    assert "database is unavailable" in result["content"][0]["text"]
    assert "structuredContent" not in result
    assert listing.status_code == 200 and listing.json()["result"]["tools"]
