"""What an operator scrapes and collects from a real server: /metrics summed over uvicorn workers, and the
OpenTelemetry span tree of a tool call exported over OTLP/HTTP to a receiver on loopback.

The server is tests/e2e/probe_server.py (serve's HTTP stack and workers, with a test-only feature): this
depends on no demo and survives any fork."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.server import LiveServer
from tests.filehost import serving_files
from tests.otlp_receiver import otlp_receiver
from tests.s3server import make_bucket, s3_server

pytestmark = pytest.mark.any_database  # which database stands the server up changes nothing here

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
OPERATION = "mcp_server_operation_duration_seconds"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
OTHER_TRACE = "5c0ffee0000000000000000000000001"


def call(server: LiveServer, name: str, arguments: dict, headers: dict | None = None, meta: dict | None = None,
         query: str = "") -> dict:
    params: dict = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    # A connection of its own: the kernel hands each to whichever worker accepts first.
    with httpx.Client(headers={"connection": "close"}) as client:
        resp = client.post(server.mcp_url + query, headers={**HEADERS, **(headers or {})}, timeout=15,
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    assert resp.status_code == 200, resp.text
    return resp.json()


def scrape(server: LiveServer) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics, by name and sorted labels, parsed with prometheus-client's own parser."""
    with httpx.Client(headers={"connection": "close"}) as client:
        resp = client.get(f"{server.base_url}/metrics", timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain; version=")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(resp.text) for s in family.samples}


def operations(samples: dict, tool: str, error_type: str = "") -> float:
    return samples.get((f"{OPERATION}_count", (("error_type", error_type), ("gen_ai_tool_name", tool),
                                               ("mcp_method_name", "tools/call"))), 0.0)


def calls_on_both_workers(server: LiveServer, name: str, arguments: dict) -> tuple[int, set[int]]:
    """21 calls at once, on connections of their own; the kernel hands each to whichever worker accepts first,
    and under load one may take them all: then 21 more, until both have served. How many were sent, and by whom
    they were served."""
    sent, served_by = 0, set()
    while len(served_by) < 2 and sent < 21 * 8:
        with ThreadPoolExecutor(7) as pool:
            answers = list(pool.map(lambda _: call(server, name, arguments), range(21)))
        assert [a["result"].get("isError", False) for a in answers] == [False] * 21
        sent += 21
        served_by = {e["pid"] for e in server.settled_log() if e.get("event") == "mcp.tool_call"
                     and e.get("tool") == name}
    assert len(served_by) == 2, f"one worker served all {sent} calls, so nothing was summed: {served_by}"
    return sent, served_by


def test_a_two_worker_server_reports_every_tools_call_once_whichever_worker_is_scraped(database_url, tmp_path):
    server = LiveServer(database_url, tmp_path / "server.log", workers=2, module="tests.e2e.probe_server").start()
    try:
        sent, _ = calls_on_both_workers(server, "probe_echo", {"text": "counted"})
        unknown = call(server, "no_such_tool", {})  # a name of the client's own: counted, never a label of its own
        for _ in range(4):  # each scrape on a connection of its own: any worker answers, with the sum
            samples = scrape(server)
            assert operations(samples, "probe_echo") == sent
            assert unknown["result"]["isError"] is True  # "Unknown tool": a tool error, as the SDK's span says
            assert operations(samples, "_OTHER", "tool_error") == 1
            assert not any("no_such_tool" in str(labels) for _, labels in samples)
        http_posts = samples[("http_server_request_duration_seconds_count", (
            ("http_request_method", "POST"), ("http_response_status_code", "200"), ("http_route", "/mcp")))]
        assert http_posts == sent + 1
        assert samples[("app_db_pool_connections_in_use", ())] == 0
    finally:
        server.stop()


def test_a_worker_killed_mid_life_keeps_its_counts_in_the_sum_and_its_live_gauges_out(database_url, tmp_path):
    metrics_dir = tmp_path / "metrics"  # configured, as on a read-only root filesystem with a mount there
    server = LiveServer(database_url, tmp_path / "server.log", workers=2, module="tests.e2e.probe_server",
                        extra_env={"APP_METRICS_DIR": str(metrics_dir)}).start()
    try:
        sent, pids = calls_on_both_workers(server, "probe_count", {})
        victim = min(pids)
        assert os.path.exists(os.path.join(metrics_dir, f"gauge_livesum_{victim}.db"))
        os.kill(victim, signal.SIGKILL)  # uvicorn replaces it; nothing tells the metrics
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            samples = scrape(server)
            if not os.path.exists(os.path.join(metrics_dir, f"gauge_livesum_{victim}.db")):
                break
            time.sleep(0.1)  # waiting for uvicorn to notice and for the next scrape, not a test delay
        assert not os.path.exists(os.path.join(metrics_dir, f"gauge_livesum_{victim}.db"))
        assert operations(samples, "probe_count") == sent  # the dead worker's calls are still counted
    finally:
        server.stop()


def test_metrics_are_refused_to_what_came_through_a_proxy_and_to_scrapers_not_configured(database_url, tmp_path):
    server = LiveServer(database_url, tmp_path / "server.log", module="tests.e2e.probe_server",
                        extra_env={"APP_METRICS_SCRAPERS": "10.1.2.0/24"}).start()
    try:
        assert httpx.get(f"{server.base_url}/metrics", timeout=5).status_code == 404  # loopback, not configured
    finally:
        server.stop()
    server = LiveServer(database_url, tmp_path / "again.log", module="tests.e2e.probe_server").start()
    try:
        assert httpx.get(f"{server.base_url}/metrics", timeout=5).status_code == 200
        unknown = httpx.get(f"{server.base_url}/no-such-path", timeout=5)
        for headers in ({"x-forwarded-for": "203.0.113.9"}, {"forwarded": "for=127.0.0.1"}, {"X-Real-IP": "1.2.3.4"},
                        {"via": "1.1 edge"}):
            through_proxy = httpx.get(f"{server.base_url}/metrics", headers=headers, timeout=5)
            assert (through_proxy.status_code, through_proxy.text) == (404, unknown.text), headers
        # Neither another method nor a slash says the path exists (a 405, a redirect)
        assert httpx.post(f"{server.base_url}/metrics", timeout=5).status_code == 404
        assert httpx.get(f"{server.base_url}/metrics/", timeout=5).status_code == 404
    finally:
        server.stop()


def test_one_tool_call_is_one_exported_span_tree_under_the_callers_traceparent(database_url, tmp_path):
    with otlp_receiver() as receiver, serving_files() as files, s3_server() as s3:
        make_bucket(s3.endpoint_url, "traced")
        url = files.offer(b"traced bytes", "text/plain")
        server = LiveServer(database_url, tmp_path / "server.log", module="tests.e2e.probe_server", extra_env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
            "APP_STORAGE_BACKEND": "s3", "APP_S3_BUCKET": "traced", "APP_S3_ENDPOINT_URL": s3.endpoint_url,
            "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://")}).start()
        try:
            answer = call(server, "probe_fetch", {"url": url}, query="?sig=SECRETSIG&name=a%23b.csv",
                          headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"})
            assert answer["result"]["structuredContent"]["status"] == 200, answer
            call(server, "no_such_tool", {}, headers={"traceparent": f"00-{OTHER_TRACE}-{CALLER_SPAN}-01"})
            spans = receiver.trace(TRACE_ID, until=lambda got: any(s.name == "POST /mcp" for s in got))
            unknown = receiver.trace(OTHER_TRACE, until=lambda got: any(s.name.startswith("tools/") for s in got))
            events = server.settled_log()
        finally:
            server.stop()
    by_name = {s.name: s for s in spans}
    http = by_name["POST /mcp"]
    assert (http.kind, http.parent_span_id, http.attributes["http.route"]) == (2, CALLER_SPAN, "/mcp")
    assert http.service == "chatgpt-mcp-app-server"
    assert not [s.name for s in spans if "SECRETSIG" in repr(s) or "a#b" in repr(s)]  # the query: in no span
    mcp = by_name["tools/call probe_fetch"]
    assert mcp.parent_span_id == http.span_id
    assert mcp.attributes["gen_ai.tool.name"] == "probe_fetch"
    below = [s for s in spans if s.parent_span_id == mcp.span_id]
    fetch = next(s for s in below if s.name == "GET")
    assert fetch.kind == 3 and fetch.attributes["http.response.status_code"] == 200
    assert "?" not in fetch.attributes["url.full"]
    assert any(s.attributes.get("rpc.service") == "S3" and s.attributes.get("rpc.method") == "PutObject"
               for s in below), [s.name for s in below]
    assert any(s.attributes.get("db.system") == "sqlite" or s.attributes.get("db.system") == "postgresql"
               for s in below), [s.name for s in below]
    # A tool name of the client's own names no span (trace backends index span names).
    (named,) = [s for s in unknown if s.name.startswith("tools/")]
    assert (named.name, named.attributes["gen_ai.tool.name"]) == ("tools/call _OTHER", "_OTHER")
    # Every line of that request carries its trace id; the tool's line, the MCP span's id.
    lines = [e for e in events if e.get("request_id") == next(
        e["request_id"] for e in events if e.get("event") == "mcp.tool_call")]
    assert {e["event"] for e in lines} >= {"mcp.tool_call", "http.request"}
    assert {e["trace_id"] for e in lines} == {TRACE_ID}
    assert next(e for e in lines if e["event"] == "mcp.tool_call")["span_id"] == mcp.span_id
    assert next(e for e in lines if e["event"] == "http.request")["span_id"] == http.span_id


def test_a_traceparent_in_the_request_meta_parents_the_mcp_span(database_url, tmp_path):
    other_trace, other_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    with otlp_receiver() as receiver:
        server = LiveServer(database_url, tmp_path / "server.log", module="tests.e2e.probe_server", extra_env={
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_SERVICE_NAME": "probe-fleet"}).start()
        try:
            call(server, "probe_count", {}, meta={"traceparent": f"00-{other_trace}-{other_span}-01"})
            spans = receiver.trace(other_trace, until=lambda got: any(s.name.startswith("tools/call") for s in got))
        finally:
            server.stop()
    (mcp,) = [s for s in spans if s.name.startswith("tools/call")]
    assert (mcp.name, mcp.parent_span_id, mcp.service) == ("tools/call probe_count", other_span, "probe-fleet")
    assert "POST /mcp" not in {s.name for s in spans}  # the HTTP span is in the trace of the (absent) header
    assert {s.parent_span_id for s in spans if s is not mcp} == {mcp.span_id}  # its query


def test_without_an_otlp_endpoint_nothing_is_traced_and_the_traceparent_still_reaches_the_log(database_url,
                                                                                           tmp_path):
    server = LiveServer(database_url, tmp_path / "server.log", module="tests.e2e.probe_server").start()
    try:
        call(server, "probe_echo", {"text": "hi"}, headers={"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"})
        call(server, "probe_echo", {"text": "no parent"}, headers={"traceparent": "00-" + "0" * 32 + "-" + "1" * 16
                                                                                  + "-01"})
        events = server.settled_log()
    finally:
        server.stop()
    echoed = [e for e in events if e.get("event") == "mcp.tool_call"
              or (e.get("event") == "http.request" and e["path"] == "/mcp")]
    with_trace = [e for e in echoed if "trace_id" in e]
    assert {e["trace_id"] for e in with_trace} == {TRACE_ID}
    assert {e["event"] for e in with_trace} == {"mcp.tool_call", "http.request"}
    assert len([e for e in echoed if e["event"] == "mcp.tool_call" and "trace_id" not in e]) == 1  # all zeros: none
    assert not any("span_id" in e for e in events)  # no span of ours exists


def test_an_otlp_protocol_this_server_cannot_speak_is_one_line_naming_the_variable(database_url, tmp_path):
    server = LiveServer(database_url, tmp_path / "server.log", extra_env={
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    with pytest.raises(RuntimeError, match="exited early"):
        server.start()
    assert server.process is not None and server.process.returncode == 2
    lines = server.log_lines()
    assert lines == ["OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf (OTLP over HTTP) is shipped, got 'grpc'"]
    assert not json.dumps(lines).count("Traceback")
