"""/metrics of an app served over real HTTP on loopback (one process, so no multiprocess directory): the families
a request, a refusal and a scrape-time gauge move, and their label values held to closed sets."""

from __future__ import annotations

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.auth.schemes import NOAUTH
from app.feature import Feature
from app.main import create_app
from app.observability.metrics import Metrics, Reading
from app.settings import load_settings
from tests.serving import serving

HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}


def _tools(registry, deps) -> None:
    @registry.tool(name="probe_budgeted", title="Budgeted", description="costs a unit", read_only=True,
                   destructive=False, open_world=False, security=[NOAUTH], budget="2/minute")
    async def probe_budgeted() -> str:
        return "ran"


def _gauges(uow):
    yield Reading("probe_things", "Things the probe keeps.", 3, {"kind": "odd"})


PROBE = Feature(name="probe", tools=_tools, gauges=_gauges)


@pytest.fixture
def base(database_url: str):
    def build(base_url: str):
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json", _env_file=None)
        return create_app(settings, features=[PROBE], metrics=Metrics())

    with serving(build) as url:
        yield url


def rpc(base: str, method: str, params: dict, forwarded_for: str = "198.51.100.7") -> dict:
    response = httpx.post(f"{base}/mcp", headers={**HEADERS, "x-forwarded-for": forwarded_for}, timeout=30,
                          json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.status_code == 200, response.text
    return response.json()


def samples(base: str) -> dict[tuple[str, tuple], float]:
    response = httpx.get(f"{base}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def test_a_refusal_a_request_and_a_scrape_time_gauge_are_each_counted_once(base):
    answers = [rpc(base, "tools/call", {"name": "probe_budgeted", "arguments": {}})["result"] for _ in range(3)]
    assert [a.get("isError", False) for a in answers] == [False, False, True]
    made_up = rpc(base, "made/up", {})
    assert made_up["error"]["code"] == -32601
    got = samples(base)
    refusals = {labels: value for (name, labels), value in got.items() if name == "app_limit_refusals_total"}
    assert refusals == {(("limit", "tool.probe_budgeted"),): 1}
    assert got[("mcp_server_operation_duration_seconds_count", (
        ("error_type", "tool_error"), ("gen_ai_tool_name", "probe_budgeted"), ("mcp_method_name", "tools/call")))] == 1
    assert got[("mcp_server_operation_duration_seconds_count", (
        ("error_type", ""), ("gen_ai_tool_name", "probe_budgeted"), ("mcp_method_name", "tools/call")))] == 2
    assert got[("mcp_server_operation_duration_seconds_count", (
        ("error_type", "-32601"), ("gen_ai_tool_name", ""), ("mcp_method_name", "_OTHER")))] == 1
    assert got[("probe_things", (("kind", "odd"),))] == 3
    assert got[("app_db_pool_connections_in_use", ())] == 0
    assert got[("http_server_request_duration_seconds_count", (
        ("http_request_method", "POST"), ("http_response_status_code", "200"), ("http_route", "/mcp")))] == 4


def test_a_path_of_the_clients_is_measured_under_no_route_of_its_own(base):
    assert httpx.get(f"{base}/no/such/path/8f3a", timeout=5).status_code == 404
    assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
    got = samples(base)
    routes = {dict(labels)["http_route"] for name, labels in got
              if name == "http_server_request_duration_seconds_count"}
    assert routes == {"", "/healthz"}
