"""The speed-up package's single-exchange lane answers exactly what the SDK transport answers, over real HTTP.

Two copies of the full app (the discovered features plus the test-only probe feature of
tests/e2e/probe_server.py), one with ``APP_TUNING=false`` (the stock core), get the same requests:
every handshake version and 2026-07-28, every kind of method, tool results, tool errors, linking
challenges, protocol errors, and the shapes the lane hands to the transport. Status,
content type and body must be identical. Only one difference is by design and tested
on its own (``tests/integration/test_fast_lane.py``): an exception that escapes the whole
handler chain, which the transport answers with code 0 and the exception's text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
from mcp.server.auth.provider import AccessToken

from app.main import create_app, discover_features
from app.settings import load_settings
from app.tuning import lane as lane_module
from tests.e2e.probe_feature import PROBE
from tests.e2e.server import ROOT
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

pytestmark = pytest.mark.tuning
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
ALL_SCOPES = ["recipes.read", "recipes.write", "search.read", "files.read", "files.write", "probe.read"]


def _app(database_url: str, fast_lane: bool):
    def build(base_url: str):
        mcp_url = f"{base_url}/mcp"
        verifier = StaticTokenVerifier({
            "alice": AccessToken(token="alice", client_id="chatgpt", scopes=ALL_SCOPES, subject="alice",
                                 resource=mcp_url),
        })
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json",
                                 tuning=fast_lane, max_body_bytes=64 * 1024, _env_file=None)
        return create_app(settings, token_verifier=verifier, features=[*discover_features(), PROBE])

    return build


@pytest.fixture(scope="module")
def lane_calls() -> Iterator[list[str]]:
    """The methods the lane handed to ``serve_one`` (both copies run in this process; only the lane calls it
    through ``app.tuning.lane``)."""
    calls: list[str] = []
    real = lane_module.serve_one

    async def counting(server, dctx, method, params, **kwargs):
        calls.append(method)
        return await real(server, dctx, method, params, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lane_module, "serve_one", counting)
        yield calls


@pytest.fixture(scope="module")
def servers(database_url: str, lane_calls: list[str]) -> Iterator[tuple[str, str]]:
    with serving(_app(database_url, True)) as lane, serving(_app(database_url, False)) as transport:
        yield lane, transport


def _rpc(method: str, params: dict | None = None, id_: object = 1) -> dict:
    message: dict = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _init(version: str) -> dict:
    return _rpc("initialize", {"protocolVersion": version, "capabilities": {},
                               "clientInfo": {"name": "parity", "version": "1"}})


def _call(name: str, arguments: object, **extra: object) -> dict:
    return _rpc("tools/call", {"name": name, "arguments": arguments, **extra})


CHATGPT_META = {"openai/widgetSessionId": "ws-1", "openai/locale": "fr-FR", "openai/subject": "anon-1"}
# (name, protocol version header or None, extra headers, body: dict / list / raw bytes)
CASES: list[tuple[str, str | None, dict[str, str], object]] = [
    *[(f"initialize {v}", v, {}, _init(v)) for v in ("2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05")],
    ("initialize without a version header", None, {}, _init("2025-06-18")),
    ("initialize asking for a version nobody speaks", "2025-06-18", {}, _init("1999-01-01")),
    ("tools/list", "2025-06-18", {}, _rpc("tools/list")),
    ("tools/list 2025-11-25", "2025-11-25", {}, _rpc("tools/list")),
    ("tools/list without a version header", None, {}, _rpc("tools/list")),
    ("tools/list signed in", "2025-06-18", {"authorization": "Bearer alice"}, _rpc("tools/list")),
    ("resources/list", "2025-06-18", {}, _rpc("resources/list")),
    ("resources/templates/list", "2025-06-18", {}, _rpc("resources/templates/list")),
    ("resources/read unknown", "2025-06-18", {}, _rpc("resources/read", {"uri": "ui://widget/nope.html"})),
    ("prompts/list", "2025-06-18", {}, _rpc("prompts/list")),
    ("ping", "2025-06-18", {}, _rpc("ping")),
    ("ping with a string id", "2025-06-18", {}, _rpc("ping", id_="abc-1")),
    ("ping with id 0", "2025-06-18", {}, _rpc("ping", id_=0)),
    ("zoo", "2025-06-18", {}, _call("get_zoo_animals", {"count": 3})),
    ("zoo with ChatGPT's _meta", "2025-06-18", {}, _call("get_zoo_animals", {"count": 2}, _meta=CHATGPT_META)),
    ("zoo 2025-11-25", "2025-11-25", {}, _call("get_zoo_animals", {"count": 3})),
    ("zoo default count", "2025-06-18", {}, _call("get_zoo_animals", {})),
    ("zoo count out of range", "2025-06-18", {}, _call("get_zoo_animals", {"count": 0})),
    ("zoo count of the wrong type", "2025-06-18", {}, _call("get_zoo_animals", {"count": "many"})),
    ("zoo details unknown id", "2025-06-18", {}, _call("get_zoo_animal_details", {"animal_id": "nope"})),
    ("cafe", "2025-06-18", {}, _call("recommend_cafe", {"city": "Paris"})),
    ("search", "2025-06-18", {}, _call("search", {"q": "json dumps"})),
    ("search signed in", "2025-06-18", {"authorization": "Bearer alice"}, _call("search", {"q": "json dumps"})),
    ("recipes anonymous, ChatGPT: a linking challenge", "2025-06-18", {},
     _call("list_saved_recipes", {}, _meta=CHATGPT_META)),
    ("recipes anonymous, another client: HTTP 401", "2025-06-18", {}, _call("list_saved_recipes", {})),
    ("recipes signed in", "2025-06-18", {"authorization": "Bearer alice"}, _call("list_saved_recipes", {})),
    ("profile anonymous, ChatGPT", "2025-06-18", {}, _call("get_account_profile", {}, _meta=CHATGPT_META)),
    ("profile anonymous, another client: HTTP 401", "2025-06-18", {}, _call("get_account_profile", {})),
    # The test-only probe's tools: what these cases ask is there in any fork, whatever demos it kept.
    ("probe", "2025-06-18", {}, _call("probe_echo", {"text": "bonjour"})),
    ("probe with ChatGPT's _meta", "2025-06-18", {}, _call("probe_card", {}, _meta=CHATGPT_META)),
    ("probe 2025-11-25", "2025-11-25", {}, _call("probe_count", {})),
    ("probe argument too long", "2025-06-18", {}, _call("probe_echo", {"text": "x" * 1001})),
    ("probe argument of the wrong type", "2025-06-18", {}, _call("probe_echo", {"text": 3})),
    ("probe argument missing", "2025-06-18", {}, _call("probe_echo", {})),
    ("probe anonymous, more for a token", "2025-06-18", {}, _call("probe_notes", {})),
    ("probe signed in", "2025-06-18", {"authorization": "Bearer alice"}, _call("probe_notes", {})),
    ("probe arguments not an object", "2025-06-18", {}, _call("probe_echo", [1, 2])),
    ("unknown tool", "2025-06-18", {}, _call("no_such_tool", {})),
    ("arguments not an object", "2025-06-18", {}, _call("get_zoo_animals", [1, 2])),
    ("tools/call without a name", "2025-06-18", {}, _rpc("tools/call", {"arguments": {}})),
    ("unknown method", "2025-06-18", {}, _rpc("no/such/method")),
    ("params not an object", "2025-06-18", {}, _rpc("tools/list", [1])),
    ("a method of a later protocol", "2025-06-18", {}, _rpc("subscriptions/listen", {})),
    ("notification", "2025-06-18", {}, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ("cancel notification", "2025-06-18", {}, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                "params": {"requestId": 1}}),
    ("a posted response", "2025-06-18", {}, {"jsonrpc": "2.0", "id": 5, "result": {}}),
    ("batch", "2025-06-18", {}, [_rpc("ping"), _rpc("ping", id_=2)]),
    ("empty batch", "2025-06-18", {}, []),
    ("malformed JSON", "2025-06-18", {}, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"'),
    ("empty body", "2025-06-18", {}, b""),
    ("wrong jsonrpc version", "2025-06-18", {}, {"jsonrpc": "1.0", "id": 1, "method": "ping"}),
    ("null id", "2025-06-18", {}, {"jsonrpc": "2.0", "id": None, "method": "ping"}),
    ("unknown version header", "1999-01-01", {}, _rpc("ping")),
    ("accepts only SSE", "2025-06-18", {"accept": "text/event-stream"}, _rpc("ping")),
    ("octet-stream body (ChatGPT's scanner)", "2025-06-18", {"content-type": "application/octet-stream"},
     _rpc("tools/list")),
    ("an HTML body", "2025-06-18", {"content-type": "text/html"}, _rpc("ping")),
    ("content type in capitals", "2025-06-18", {"content-type": "APPLICATION/JSON"}, _rpc("ping")),
    ("a JSON-like content type", "2025-06-18", {"content-type": "application/json-patch+json"}, _rpc("ping")),
    ("JSON Lines content type", "2025-06-18", {"content-type": "application/jsonl"}, _rpc("ping")),
    ("content type with a charset", "2025-06-18", {"content-type": "application/json; charset=utf-8"},
     _rpc("ping")),
    ("a foreign Origin", "2025-06-18", {"origin": "https://evil.example"}, _rpc("ping")),
    ("a bad token", "2025-06-18", {"authorization": "Bearer nope"}, _rpc("ping")),
    ("a body over the limit", "2025-06-18", {}, _call("search", {"q": "x" * 70_000})),
]


MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "parity", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


def _modern(method: str, params: dict | None = None, *, meta: dict | None = None, id_: object = 1,
            headers: dict[str, str] | None = None) -> tuple[dict[str, str], dict]:
    """A 2026-07-28 request: the envelope in params._meta and the routing headers that repeat the body."""
    params = dict(params or {})
    params["_meta"] = {**ENVELOPE, **(meta or {})}
    routing = {"mcp-method": method}
    if method in ("tools/call", "prompts/get"):
        routing["mcp-name"] = str(params.get("name"))
    elif method == "resources/read":
        routing["mcp-name"] = str(params.get("uri"))
    return routing | (headers or {}), _rpc(method, params, id_)


def _modern_case(name: str, method: str, params: dict | None = None, **kwargs) -> tuple:
    headers, body = _modern(method, params, **kwargs)
    return (f"2026-07-28 {name}", MODERN, headers, body)


MODERN_CASES: list[tuple[str, str | None, dict[str, str], object]] = [
    _modern_case("server/discover", "server/discover"),
    _modern_case("tools/list", "tools/list"),
    _modern_case("tools/list signed in", "tools/list", headers={"authorization": "Bearer alice"}),
    _modern_case("resources/list", "resources/list"),
    _modern_case("resources/read unknown", "resources/read", {"uri": "ui://widget/nope.html"}),
    _modern_case("prompts/list", "prompts/list"),
    _modern_case("ping", "ping"),
    _modern_case("ping with a string id", "ping", id_="abc-1"),
    _modern_case("zoo", "tools/call", {"name": "get_zoo_animals", "arguments": {"count": 3}}),
    _modern_case("zoo with ChatGPT's _meta", "tools/call", {"name": "get_zoo_animals", "arguments": {"count": 2}},
                 meta=CHATGPT_META),
    _modern_case("zoo count out of range", "tools/call", {"name": "get_zoo_animals", "arguments": {"count": 0}}),
    _modern_case("zoo count of the wrong type", "tools/call",
                 {"name": "get_zoo_animals", "arguments": {"count": "many"}}),
    _modern_case("unknown tool", "tools/call", {"name": "no_such_tool", "arguments": {}}),
    _modern_case("unknown method", "no/such/method"),
    _modern_case("a handshake-era method", "initialize", {"protocolVersion": MODERN, "capabilities": {},
                                                          "clientInfo": {"name": "parity", "version": "1"}}),
    _modern_case("recipes anonymous, ChatGPT: a linking challenge", "tools/call",
                 {"name": "list_saved_recipes", "arguments": {}}, meta=CHATGPT_META),
    _modern_case("recipes anonymous, another client: HTTP 401", "tools/call",
                 {"name": "list_saved_recipes", "arguments": {}}),
    _modern_case("recipes signed in", "tools/call", {"name": "list_saved_recipes", "arguments": {}},
                 headers={"authorization": "Bearer alice"}),
    _modern_case("probe", "tools/call", {"name": "probe_echo", "arguments": {"text": "bonjour"}}),
    _modern_case("probe card", "tools/call", {"name": "probe_card", "arguments": {}}, meta=CHATGPT_META),
    _modern_case("probe argument too long", "tools/call", {"name": "probe_echo", "arguments": {"text": "x" * 1001}}),
    _modern_case("probe signed in", "tools/call", {"name": "probe_notes", "arguments": {}},
                 headers={"authorization": "Bearer alice"}),
    # What the SDK's ladder rejects goes to it, for its own answer and status.
    _modern_case("a name header that disagrees", "tools/call", {"name": "probe_echo", "arguments": {"text": "a"}},
                 headers={"mcp-name": "probe_card"}),
    _modern_case("a method header that disagrees", "tools/list", headers={"mcp-method": "prompts/list"}),
    _modern_case("no method header", "tools/list", headers={"mcp-method": ""}),
    _modern_case("an envelope of another version", "tools/list",
                 meta={"io.modelcontextprotocol/protocolVersion": "2025-06-18"}),
    _modern_case("an Mcp-Param header no tool declares", "tools/call",
                 {"name": "probe_echo", "arguments": {"text": "a"}}, headers={"mcp-param-text": "b"}),
    _modern_case("subscriptions/listen", "subscriptions/listen"),
    ("2026-07-28 no envelope", MODERN, {"mcp-method": "tools/list"}, _rpc("tools/list")),
    ("2026-07-28 notification", MODERN, {"mcp-method": "notifications/cancelled"},
     {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "_meta": ENVELOPE}}),
    ("2026-07-28 batch", MODERN, {"mcp-method": "ping"}, [_modern("ping")[1]]),
    ("2026-07-28 malformed JSON", MODERN, {"mcp-method": "ping"}, b'{"jsonrpc": "2.0", "id": 1, "method": "ping"'),
    ("2026-07-28 accepts only SSE", MODERN, {"mcp-method": "ping", "accept": "text/event-stream"},
     _modern("ping")[1]),
    ("2026-07-28 an HTML body", MODERN, {"mcp-method": "ping", "content-type": "text/html"}, _modern("ping")[1]),
    ("2026-07-28 a foreign Origin", MODERN, {"mcp-method": "ping", "origin": "https://evil.example"},
     _modern("ping")[1]),
    ("2026-07-28 a body over the limit", MODERN, {"mcp-method": "tools/call", "mcp-name": "search"},
     _modern("tools/call", {"name": "search", "arguments": {"q": "x" * 70_000}})[1]),
]
CASES += MODERN_CASES


# Cases the admission does not hand to the lane: the transport answers them (or, for a security refusal,
# the transport's own check does, in the admission; a bad token and an oversized body stop before either).
NOT_SERVED_BY_THE_LANE = {
    "notification", "cancel notification", "a posted response", "batch", "empty batch", "malformed JSON",
    "empty body", "wrong jsonrpc version", "null id", "params not an object", "unknown version header",
    "accepts only SSE", "an HTML body", "content type in capitals", "a JSON-like content type",
    "JSON Lines content type", "a foreign Origin", "a bad token", "a body over the limit",
    # The HTTP challenge is answered before either path (app/auth/challenge.py); in a fork without the recipes
    # demo its tool is unknown, and the lane answers that.
    "profile anonymous, another client: HTTP 401",
    *(["recipes anonymous, another client: HTTP 401", "2026-07-28 recipes anonymous, another client: HTTP 401"]
      if (ROOT / "app" / "features" / "recipes").is_dir() else []),
    "2026-07-28 a name header that disagrees", "2026-07-28 a method header that disagrees",
    "2026-07-28 no method header", "2026-07-28 an envelope of another version",
    "2026-07-28 subscriptions/listen", "2026-07-28 no envelope", "2026-07-28 notification", "2026-07-28 batch",
    "2026-07-28 malformed JSON", "2026-07-28 accepts only SSE", "2026-07-28 an HTML body",
    "2026-07-28 a foreign Origin", "2026-07-28 a body over the limit",
}


def _send(base_url: str, version: str | None, extra: dict[str, str], body: object) -> httpx.Response:
    headers = dict(HEADERS)
    if version:
        headers["mcp-protocol-version"] = version
    headers |= extra
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base_url}/mcp", content=content, headers=headers, timeout=30)


def _seen(response: httpx.Response) -> tuple[int, str | None, object]:
    # Each copy names its own origin (the files widget's redirect domain, challenge URLs), and so
    # the URI of a widget served with it, which names the hash of its HTML and of that _meta.
    text = response.text.replace(str(response.url.copy_with(path="/", query=None)).rstrip("/"), "ORIGIN")
    text = re.sub(
        r"ui://widget/([a-z0-9_-]+)-[0-9a-f]{12}\.html", r"ui://widget/\1-HASH.html", text
    )
    try:
        body: object = json.loads(text)
    except ValueError:
        body = text
    return response.status_code, response.headers.get("content-type"), body


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_lane_answers_what_the_sdk_transport_answers(servers: tuple[str, str], lane_calls: list[str], case):
    name, version, extra, body = case
    lane, transport = servers
    before = len(lane_calls)
    through_lane = _seen(_send(lane, version, extra, body))
    served_by_lane = len(lane_calls) > before
    assert through_lane == _seen(_send(transport, version, extra, body))
    assert served_by_lane is (name not in NOT_SERVED_BY_THE_LANE)


def test_every_widget_resource_reads_the_same_through_both(servers: tuple[str, str]):
    lane, transport = servers
    listed = {
        path: {
            r["name"]: r["uri"]
            for r in _send(path, "2025-06-18", {}, _rpc("resources/list")).json()["result"][
                "resources"
            ]
        }
        for path in servers
    }
    assert any(uri.startswith("ui://widget/probe-") for uri in listed[lane].values())
    assert listed[lane].keys() == listed[transport].keys()
    for name, uri in listed[lane].items():
        through_lane = _send(lane, "2025-06-18", {}, _rpc("resources/read", {"uri": uri}))
        through_sdk = _send(
            transport, "2025-06-18", {}, _rpc("resources/read", {"uri": listed[transport][name]})
        )
        assert _seen(through_lane) == _seen(through_sdk)


ASKING_ENVELOPE = {
    **ENVELOPE,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


def _confirm(base_url: str, **more: object) -> httpx.Response:
    params = {
        "name": "probe_confirm",
        "arguments": {"text": "tea"},
        "_meta": ASKING_ENVELOPE,
        **more,
    }
    return _send(base_url, MODERN, {"mcp-method": "tools/call", "mcp-name": "probe_confirm"},
                 _rpc("tools/call", params))


def test_a_question_and_its_answer_pass_both_paths_alike(
    servers: tuple[str, str], lane_calls: list[str]
):
    """An input_required result (its state sealed: a nonce of its own each time) and the retry that
    answers it."""
    lane, transport = servers
    before = len(lane_calls)
    asked = {path: _confirm(path) for path in (lane, transport)}
    assert len(lane_calls) == before + 1
    seen = {path: _seen(response) for path, response in asked.items()}
    states = {path: seen[path][2]["result"].pop("requestState")  # type: ignore[index]
              for path in asked}
    assert seen[lane][0] == 200 and seen[lane] == seen[transport]
    assert asked[lane].json()["result"]["resultType"] == "input_required"
    answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
    done = {
        path: _confirm(path, inputResponses=answer, requestState=states[path]) for path in asked
    }
    # The text names the process that asked and the one that answered: both copies are this one.
    assert _seen(done[lane]) == _seen(done[transport])
    assert done[lane].json()["result"]["structuredContent"] == {"text": "tea", "confirmed": True}
    assert len(lane_calls) == before + 2


def test_a_question_asked_of_an_older_client_is_the_same_tool_error_on_both_paths(
    servers: tuple[str, str],
):
    lane, transport = servers
    body = _call("probe_confirm", {"text": "tea"})
    through_lane = _seen(_send(lane, "2025-11-25", {}, body))
    assert through_lane == _seen(_send(transport, "2025-11-25", {}, body))
    assert through_lane[2]["result"]["isError"] is True
