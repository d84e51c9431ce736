"""One tool call produces correlated log lines and never logs the user's location."""

from __future__ import annotations

import io
import json
import logging

from starlette.testclient import TestClient

from app.logging import configure_logging
from app.main import create_app

META = {
    "openai/widgetSessionId": "ws_123",
    "openai/session": "sess_abc",
    "openai/subject": "subj_42",
    "openai/organization": "org_7",
    "openai/locale": "es-MX",
    "openai/userLocation": {"city": "Ciudad de México", "latitude": 19.43, "longitude": -99.13},
}


def test_a_tool_call_logs_correlation_fields_and_no_location(settings, db):
    configure_logging("json", "INFO")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.getLogger().handlers[0].formatter)
    logging.getLogger().addHandler(handler)
    try:
        with TestClient(create_app(settings, db), base_url=settings.base_url) as client:
            resp = client.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "recommend_cafe", "arguments": {}, "_meta": META}},
                headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18",
                         "x-request-id": "req-corr-1"},
            )
    finally:
        logging.getLogger().removeHandler(handler)
    assert resp.status_code == 200 and not resp.json()["result"].get("isError")
    lines = [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]
    call = next(e for e in lines if e["event"] == "mcp.tool_call")
    http = next(e for e in lines if e["event"] == "http.request" and e.get("request_id") == "req-corr-1")
    for event in (call, http):
        assert event["request_id"] == "req-corr-1"
        assert event["tool"] == "recommend_cafe"
        assert event["widget_session_id"] == "ws_123"
        assert event["openai_session"] == "sess_abc"
        assert event["openai_subject"] == "subj_42"
        assert event["openai_organization"] == "org_7"
        assert event["protocol_version"] == "2025-06-18"
        assert event["rpc_method"] == "tools/call"
    assert call["locale"] == "es-MX" and call["outcome"] == "ok" and call["duration_ms"] >= 0
    assert http["status"] == 200
    raw = stream.getvalue()
    assert "Ciudad de M" not in raw and "19.43" not in raw and "userLocation" not in raw
