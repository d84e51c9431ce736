"""A tools/call the caller may not use, answered as each client understands (app/auth/challenge.py):
ChatGPT (its openai/* request _meta) gets the isError result with _meta["mcp/www_authenticate"]; any other
client HTTP 401 without a token (no error code, RFC 6750 §3.1) and 403 insufficient_scope with one; both
protocol paths (the 2025 lane, the SDK's transport, sessionless 2026-07-28); APP_AUTH_CHALLENGE forces either."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from mcp.server.auth.provider import AccessToken

from app.auth.schemes import NOAUTH, oauth2
from app.auth.scopes import Scope
from app.feature import Feature
from app.main import create_app
from app.settings import load_settings
from tests.challenges import MODERN_META, plain_call
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

# Nothing here depends on the database: SQLite only.
pytestmark = pytest.mark.any_database

PATHS = [(True, "2025-06-18"), (False, "2025-06-18"), (True, "2026-07-28")]
CHATGPT = {"openai/widgetSessionId": "ws-1", "openai/locale": "en-US"}


def _tools(registry, deps) -> None:
    @registry.tool(name="gate_open", title="Open", description="anyone", read_only=True, destructive=False,
                   open_world=False, security=[NOAUTH])
    async def gate_open() -> str:
        return "open"

    @registry.tool(name="gate_notes", title="Notes", description="needs gate.read", read_only=True,
                   destructive=False, open_world=False, security=[oauth2("gate.read")])
    async def gate_notes() -> str:
        return "notes"

    @registry.tool(name="gate_write", title="Write", description="needs gate.write", read_only=False,
                   destructive=False, open_world=False, security=[oauth2("gate.write")])
    async def gate_write() -> str:
        return "written"


GATE = Feature(name="gate", tools=_tools, scopes=[Scope("gate.read", {"en": "read"}),
                                                  Scope("gate.write", {"en": "write"})])


def _server(database_url: str, lane: bool, mode: str | None, **more: Any):
    def build(base_url: str):
        verifier = StaticTokenVerifier({"reader": AccessToken(token="reader", client_id="c", scopes=["gate.read"],
                                                              subject="acct-r", resource=f"{base_url}/mcp")})
        extra = {"auth_challenge": mode} if mode else {}
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json",
                                 tuning=lane, _env_file=None, **extra, **more)
        return create_app(settings, token_verifier=verifier, features=[GATE])
    return serving(build)


def _call(base: str, version: str, name: str, *, token: str | None = None, meta: dict | None = None
          ) -> httpx.Response:
    return plain_call(f"{base}/mcp", name, token=token, version=version, meta=meta)


@pytest.fixture(scope="module")
def servers(database_url: str) -> Iterator[Callable[..., str]]:
    """A server per (lane, mode, settings), started once for the module when first asked for."""
    started: dict[tuple, str] = {}
    with contextlib.ExitStack() as stack:
        def get(lane: bool, mode: str | None, **more: Any) -> str:
            key = (lane, mode, *sorted(more.items()))
            if key not in started:
                started[key] = stack.enter_context(_server(database_url, lane, mode, **more))
            return started[key]
        yield get


@pytest.fixture(params=PATHS, ids=[f"{v}{'' if lane else ', lane off'}" for lane, v in PATHS])
def auto(request: pytest.FixtureRequest, servers):
    lane, version = request.param
    return servers(lane, "auto"), version


def test_a_plain_client_without_a_token_gets_401_with_the_metadata_and_scope_and_no_error_code(auto):
    base, version = auto
    response = _call(base, version, "gate_notes")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", scope="gate.read"')


def test_a_plain_client_whose_token_lacks_the_scope_gets_403_insufficient_scope(auto):
    base, version = auto
    response = _call(base, version, "gate_write", token="reader")
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith(f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", '
                                'scope="gate.write", error="insufficient_scope"')


def test_chatgpt_gets_the_tool_result_with_its_meta_challenge(auto):
    base, version = auto
    response = _call(base, version, "gate_notes", meta=CHATGPT)
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["isError"] is True
    assert 'scope="gate.read"' in result["_meta"]["mcp/www_authenticate"][0]


def test_calls_the_caller_may_make_are_answered_as_before(auto):
    base, version = auto
    assert _call(base, version, "gate_open").json()["result"]["content"][0]["text"] == "open"
    assert _call(base, version, "gate_notes", token="reader").json()["result"]["content"][0]["text"] == "notes"
    # An unknown tool is the SDK's to answer (a JSON-RPC error or an isError result), never a challenge.
    assert _call(base, version, "gate_nope").status_code == 200


@pytest.mark.parametrize(("mode", "meta", "status"), [("meta", None, 200), ("http", CHATGPT, 401)],
                         ids=["meta-for-a-plain-client", "http-for-chatgpt"])
def test_the_setting_forces_one_answer_for_every_request(servers, mode, meta, status):
    base = servers(True, mode)
    response = _call(base, "2025-06-18", "gate_notes", meta=meta)
    assert response.status_code == status
    if status == 200:
        assert response.json()["result"]["isError"] is True


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
def test_a_body_past_the_limit_is_left_to_the_transport(servers, chunked):
    # A refused call the gate would answer 401, but too large to read: the transport's 413, as for any body.
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "gate_notes", "arguments": {"pad": "a" * 100_000}}}).encode()
    content = iter([body[:50_000], body[50_000:]]) if chunked else body
    base = servers(True, "http", max_body_bytes=64 * 1024)
    response = httpx.post(f"{base}/mcp", content=content, timeout=30, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18"})
    assert response.status_code == 413


def _raw(base: str, body: object, **headers: str) -> httpx.Response:
    return httpx.post(f"{base}/mcp", content=json.dumps(body).encode(), timeout=30, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-06-18", **headers})


REFUSED = {"name": "gate_notes", "arguments": {}}


@pytest.mark.parametrize(("body", "headers", "status"), [
    ({"jsonrpc": "2.0", "method": "tools/call", "params": REFUSED}, {}, 202),  # a notification: nothing runs
    # The SDK takes a null or boolean id for a notification too.
    ({"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": REFUSED}, {}, 202),
    ({"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": REFUSED}, {}, 202),
    ({"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": REFUSED}, {}, 400),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REFUSED}, {"origin": "https://evil.example"}, 403),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REFUSED}, {"accept": "text/event-stream"}, 406),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**REFUSED, "_meta": MODERN_META}},
     {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "gate_open"}, 400),
], ids=["notification", "null-id", "bool-id", "jsonrpc-1.0", "foreign-origin", "no-json-accept",
        "2026-name-mismatch"])
def test_a_request_the_sdk_would_not_run_gets_the_sdks_answer_not_a_challenge(servers, body, headers, status):
    base = servers(True, "http")
    response = _raw(base, body, **headers)
    assert response.status_code == status, response.text
    assert "www-authenticate" not in response.headers


def test_a_chunked_body_under_the_limit_is_read_whole_and_answered(servers):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": REFUSED}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-06-18"}
    open_call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "gate_open", "arguments": {}}}).encode()
    base = servers(True, "auto")
    refused = httpx.post(f"{base}/mcp", content=iter([body[:10], body[10:]]), headers=headers, timeout=30)
    served = httpx.post(f"{base}/mcp", content=iter([open_call[:7], open_call[7:]]), headers=headers, timeout=30)
    assert refused.status_code == 401
    assert served.json()["result"]["content"][0]["text"] == "open"


def test_older_chatgpt_clients_meta_is_recognised_too(auto):
    base, version = auto
    response = _call(base, version, "gate_notes", meta={"webplus/i18n": "en-US"})
    assert response.status_code == 200 and response.json()["result"]["isError"] is True


@pytest.mark.parametrize(("lane", "version"), [(True, "2025-06-18"), (False, "2025-06-18"), (True, "2026-07-28")])
def test_http_mode_answers_chatgpts_under_scoped_call_with_403_too(servers, lane, version):
    base = servers(lane, "http")
    response = _call(base, version, "gate_write", token="reader", meta=CHATGPT)
    assert response.status_code == 403 and 'error="insufficient_scope"' in response.headers["www-authenticate"]


def _refusals_counted(base: str) -> float:
    scraped = httpx.get(f"{base}/metrics", timeout=10).text
    counted = [line for line in scraped.splitlines() if line.startswith("mcp_server_operation_duration_seconds_count{")
               and 'gen_ai_tool_name="gate_write"' in line and 'error_type="tool_error"' in line
               and 'mcp_method_name="tools/call"' in line]
    return sum(float(line.rsplit(" ", 1)[1]) for line in counted)


def test_a_refusal_answered_here_is_logged_and_counted_as_the_sdk_path_would(servers, json_log):
    base = servers(True, "auto")
    before = _refusals_counted(base)
    response = httpx.post(f"{base}/mcp", timeout=30, headers={
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18",
        "authorization": "Bearer reader", "x-request-id": "req-gate"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "gate_write", "arguments": {}}})
    assert response.status_code == 403
    [line] = [e for e in json_log() if e.get("request_id") == "req-gate" and e["event"] == "mcp.tool_call"]
    assert (line["tool"], line["outcome"], line["answered"], line["status"], line["client_id"], line["subject"],
            line["rpc_method"], line["protocol_version"]) == (
        "gate_write", "auth_required", "http", 403, "c", "acct-r", "tools/call", "2025-06-18")
    assert _refusals_counted(base) == before + 1
