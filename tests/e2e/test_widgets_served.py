"""Widgets as the deployed server serves them: ``ui://`` resources read from the built bundles,
the app-only widget log, and the development host routes (absent in production)."""

from __future__ import annotations

import json
import re
import uuid
from html.parser import HTMLParser

import httpx
import pytest
from mcp.client import Client

from app.mcp.check import collect, lint
from app.mcp.widgets import DIST
from tests.demos import DEMOS
from tests.e2e.server import LiveServer

# Widget resources and the widget log: nothing here is stored, whichever database stands the server up.
pytestmark = [pytest.mark.anyio, pytest.mark.any_database, pytest.mark.demo(*DEMOS)]
WIDGET_TOOLS = {"search": "search", "get_zoo_animals": "zoo", "recommend_cafe": "cafes",
                "list_saved_recipes": "recipes", "analyze_file": "files", "list_files": "files"}


class _Doc(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value and value.startswith(("http:", "https:", "//")):
                self.external.append(value)


def _read_all(url: str) -> tuple[dict, dict]:
    """The raw JSON on the wire (the SDK client's models drop ChatGPT's top-level fields)."""
    with httpx.Client(timeout=10) as http:
        tools, resources = collect(http, url)
    return {t["name"]: t for t in tools}, resources


def test_every_widget_is_a_hashed_ui_resource_with_every_chatgpt_key_and_self_contained_html(
        live_server: LiveServer):
    tools, resources = _read_all(live_server.mcp_url)
    manifest = json.loads((DIST / "manifest.json").read_text())["widgets"]
    assert len(resources) == len(manifest) == 5
    for tool_name, widget in WIDGET_TOOLS.items():
        meta = tools[tool_name]["_meta"]
        uri = meta["ui"]["resourceUri"]
        assert meta["openai/outputTemplate"] == uri, tool_name
        assert re.fullmatch(rf"ui://widget/{widget}-[0-9a-f]{{12}}\.html", uri), uri
        content = resources[uri]["contents"][0]
        assert resources[uri]["mimeType"] == content["mimeType"] == "text/html;profile=mcp-app"
        assert content["text"].encode() == (DIST / manifest[widget]["file"]).read_bytes()
        doc = _Doc()
        doc.feed(content["text"])
        assert {"html", "head", "body", "script", "style"} <= set(doc.tags), widget
        assert doc.external == [], f"{widget} loads {doc.external}: bundles must inline everything"
        cmeta = content["_meta"]
        assert cmeta["ui"]["domain"] == cmeta["openai/widgetDomain"] == "https://web-sandbox.oaiusercontent.com"
        # Only the cafés' map draws from elsewhere: its tiles (APP_CAFES_MAP_TILES's origin).
        tiles = ["https://tile.openstreetmap.org"] if widget == "cafes" else []
        assert cmeta["ui"]["csp"] == {"connectDomains": [], "resourceDomains": tiles}
        assert cmeta["openai/widgetCSP"]["resource_domains"] == tiles
        assert cmeta["ui"]["prefersBorder"] is cmeta["openai/widgetPrefersBorder"] is True
        assert cmeta["openai/widgetDescription"]
    cafes = next(r for u, r in resources.items() if "/cafes-" in u)["contents"][0]["_meta"]
    assert cafes["openai/widgetCSP"]["redirect_domains"] == ["https://www.openstreetmap.org"]
    search = next(r for u, r in resources.items() if "/search-" in u)["contents"][0]["_meta"]
    assert search["openai/widgetCSP"]["redirect_domains"] == ["https://docs.python.org"]
    files = next(r for u, r in resources.items() if "/files-" in u)["contents"][0]["_meta"]
    assert files["openai/widgetCSP"]["redirect_domains"] == [live_server.base_url]  # local storage links
    zoo = next(r for u, r in resources.items() if "/zoo-" in u)["contents"][0]["_meta"]
    assert zoo["openai/ui"]["availableDisplayModes"] == ["inline", "fullscreen"]
    assert lint(list(tools.values()), resources) == []


async def test_the_widget_log_is_app_only_and_its_lines_follow_the_widget_session(live_server: LiveServer):
    sid = f"ws-{uuid.uuid4().hex}"
    async with Client(live_server.mcp_url) as client:
        log_tool = next(t for t in (await client.list_tools()).tools if t.name == "log_widget_event")
        await client.call_tool("get_zoo_animals", {"count": 1}, meta={"openai/widgetSessionId": sid})
        receipt = await client.call_tool(
            "log_widget_event",
            {"event": "zoo.open", "level": "warning", "widget": "zoo", "message": "m" * 5000,
             "data": {"animal_id": "red-panda-ember", "nested": {"accessToken": "s3cret"},
                      "link": "https://x.example/f?sig=s3cret"}},
            meta={"openai/widgetSessionId": sid})
        big = await client.call_tool("log_widget_event", {"event": "zoo.big", "data": {"blob": "x" * 5000},
                                                          "message": "failed at https://x.example/f?sig=s3cret"},
                                     meta={"openai/widgetSessionId": sid})
    assert log_tool.meta["ui"] == {"visibility": ["app"]} and log_tool.meta["openai/visibility"] == "private"
    assert "openai/outputTemplate" not in log_tool.meta
    assert receipt.structured_content == big.structured_content == {"outcome": "logged"}
    async with httpx.AsyncClient(base_url=live_server.base_url, timeout=10) as http:
        body = (await http.get("/dev/logs", params={"widget_session_id": sid})).json()
        later = (await http.get("/dev/logs", params={"widget_session_id": sid, "after": body["last"]})).json()
    events = [(line["event"], line.get("tool"), line.get("widget_event")) for line in body["lines"]]
    assert events == [("mcp.tool_call", "get_zoo_animals", None),
                      ("widget.event", "log_widget_event", "zoo.open"), ("mcp.tool_call", "log_widget_event", None),
                      ("widget.event", "log_widget_event", "zoo.big"), ("mcp.tool_call", "log_widget_event", None)]
    opened = body["lines"][1]
    assert opened["level"] == "warning" and opened["widget"] == "zoo"
    assert opened["message"] == "m" * 1000 and opened["message_truncated"] == 5000
    assert opened["data"] == {"animal_id": "red-panda-ember", "nested": {"accessToken": "[redacted]"},
                              "link": "https://x.example/f?[redacted]"}
    assert "s3cret" not in live_server.log_path.read_text()
    assert "data" not in body["lines"][3] and body["lines"][3]["data_dropped_bytes"] > 5000
    assert body["lines"][3]["message"] == "failed at https://x.example/f?[redacted]"
    assert later == {"lines": [], "last": body["last"]}
    # The same lines are in the server's JSON log, so production can follow a session too.
    logged = [json.loads(line) for line in live_server.log_path.read_text().splitlines() if line.startswith("{")]
    assert [e["widget_event"] for e in logged if e.get("widget_session_id") == sid and e["event"] == "widget.event"] \
        == ["zoo.open", "zoo.big"]


async def test_a_widget_session_flooding_the_log_is_rate_limited_without_an_error(live_server: LiveServer):
    sid, user = f"ws-{uuid.uuid4().hex}", f"user-{uuid.uuid4().hex}"  # a caller of its own: budgets are per caller
    async with Client(live_server.mcp_url) as client:
        receipts = [await client.call_tool("log_widget_event", {"event": "widget.error", "level": "error"},
                                           meta={"openai/widgetSessionId": sid, "openai/subject": user})
                    for _ in range(32)]
        other = await client.call_tool("log_widget_event", {"event": "widget.mount"},
                                       meta={"openai/widgetSessionId": sid + "-other", "openai/subject": user})
    assert [r.structured_content["outcome"] for r in receipts] == ["logged"] * 30 + ["rate_limited"] * 2
    assert not any(r.is_error for r in receipts)
    assert other.structured_content == {"outcome": "logged"}  # limits are per widget session


@pytest.mark.parametrize(("args", "needle"), [
    ({"event": "Not An Event"}, "event"), ({"event": "ok", "level": "fatal"}, "level"),
    ({"event": "ok", "message": "x" * 20_001}, "message"),
])
async def test_a_malformed_log_event_is_a_validation_error(live_server: LiveServer, args: dict, needle: str):
    async with Client(live_server.mcp_url) as client:
        result = await client.call_tool("log_widget_event", args)
    assert result.is_error and needle in result.content[0].text


def test_the_dev_host_page_and_log_endpoint_are_served_in_development(live_server: LiveServer):
    page = httpx.get(f"{live_server.base_url}/dev/host", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.text == (DIST.parent / "devhost" / "index.html").read_text()
    for params, needle in (({}, "widget_session_id"), ({"widget_session_id": "x" * 129}, "widget_session_id"),
                           ({"widget_session_id": "a", "after": "-1"}, "after"),
                           ({"widget_session_id": "a", "after": "²"}, "after")):
        bad = httpx.get(f"{live_server.base_url}/dev/logs", params=params, timeout=10)
        assert bad.status_code == 400 and needle in bad.json()["error_description"]


def test_the_dev_file_library_keeps_an_upload_for_the_server_to_fetch(live_server: LiveServer):
    body = b"<script>alert(1)</script>"
    made = httpx.post(f"{live_server.base_url}/dev/files", content=body,
                      headers={"content-type": "text/html", "x-file-name": "page.html"}, timeout=10)
    assert made.status_code == 201
    url = made.json()["url"]
    assert url.startswith(f"{live_server.base_url}/dev/files/devfile_")
    got = httpx.get(url, timeout=10)
    assert got.content == body
    assert got.headers["content-type"] == "application/octet-stream"  # active types never render here
    assert 'filename="page.html"' in got.headers["content-disposition"]
    assert httpx.get(f"{live_server.base_url}/dev/files/devfile_nope", timeout=10).status_code == 404
    chunked = httpx.post(f"{live_server.base_url}/dev/files", content=iter([b"a", b"b"]), timeout=10)
    assert chunked.status_code == 411 and "Content-Length" in chunked.json()["error_description"]
