"""What 2026-07-28 results say of how long a client may keep them (SEP-2549;
docs/chatgpt-contract.md
§2, "Cache hints"), over real HTTP: lists shared for a minute, a content-hashed widget for good, any
other resource never."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.main import create_app
from app.mcp.middleware import LIST_TTL_MS, WIDGET_TTL_MS
from app.settings import load_settings
from tests.conformance_feature import CONFORMANCE
from tests.e2e.probe_feature import PROBE
from tests.serving import serving

# What a result says of its caching is the MCP layer's; the database is never in question.
pytestmark = pytest.mark.any_database
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "cache-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def base_url(database_url: str) -> Iterator[str]:
    def build(base: str):
        settings = load_settings(database_url=database_url, base_url=base, _env_file=None)
        return create_app(settings, features=[PROBE, CONFORMANCE])

    with serving(build) as url:
        yield url


def _modern(base_url: str, method: str, params: dict | None = None) -> dict:
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if method == "resources/read":
        headers["mcp-name"] = str((params or {})["uri"])
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {**(params or {}), "_meta": ENVELOPE},
    }
    response = httpx.post(f"{base_url}/mcp", json=body, headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["result"]


@pytest.mark.parametrize(
    "method",
    ["tools/list", "resources/list", "resources/templates/list", "prompts/list", "server/discover"],
)
def test_a_list_is_the_same_for_everyone_and_kept_a_minute(base_url: str, method: str):
    result = _modern(base_url, method)
    assert (result["ttlMs"], result["cacheScope"]) == (LIST_TTL_MS, "public")


def test_a_content_hashed_widget_is_kept_for_good_by_anyone(base_url: str):
    [widget] = [
        r["uri"]
        for r in _modern(base_url, "resources/list")["resources"]
        if r["uri"].startswith("ui://widget/probe-")
    ]
    result = _modern(base_url, "resources/read", {"uri": widget})
    assert (result["ttlMs"], result["cacheScope"]) == (WIDGET_TTL_MS, "public")
    assert result["contents"][0]["uri"] == widget


@pytest.mark.parametrize("uri", ["test://static-text", "test://template/7/data"])
def test_any_other_resource_is_never_kept(base_url: str, uri: str):
    result = _modern(base_url, "resources/read", {"uri": uri})
    assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


def test_older_protocols_get_no_hints(base_url: str):
    response = httpx.post(
        f"{base_url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "content-type": "application/json",
            "accept": "application/json",
            "mcp-protocol-version": "2025-11-25",
        },
        timeout=10,
    )
    assert "ttlMs" not in response.json()["result"]
