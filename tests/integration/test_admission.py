"""The one decision per POST /mcp (app/mcp/admission.py) in front of a real SDK transport: which requests it
calls plain exchanges and hands to a lane, which it leaves to the transport (whose answer, errors included,
is then the SDK's own), what it refuses itself (a body over the limit), and what it hands down.

The lane here is a recording fake: the core decides, whatever answers. The speed-up package's real lane has
its own tests (tests/integration/test_fast_lane.py, marked ``tuning``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated

import httpx
import pytest
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import Field
from starlette.types import Receive, Send

from app.auth.schemes import Access
from app.mcp.admission import Admission, McpAdmission, current
from tests.mcp_requests import (
    ENVELOPE,
    LEGACY,
    MODERN,
    NO_REBINDING_CHECK,
    CountingTransport,
    call,
    modern_call,
    post,
)

pytestmark = pytest.mark.anyio
LIMIT = 4096


@dataclass
class RecordingLane:
    """Answers every plain exchange it is handed with its own marker, and keeps the admission."""

    seen: list[Admission] = field(default_factory=list)
    ready: bool = True

    def run(self) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()

    async def answer(self, admission: Admission, send: Send) -> None:
        assert current() is admission  # handed down, and current while it is answered
        self.seen.append(admission)
        body = json.dumps({"lane": True}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def build_server(security: TransportSecuritySettings = NO_REBINDING_CHECK) -> tuple[MCPServer, CountingTransport]:
    mcp = MCPServer("admission-test")

    @mcp.tool(name="echo", description="Echo")
    async def echo(text: str) -> str:
        return text

    @mcp.tool(name="regional", description="An argument the client repeats in an Mcp-Param header")
    async def regional(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return region

    transport = CountingTransport(mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                          json_response=True, max_request_body_size=LIMIT,
                                                          transport_security=security))
    return mcp, transport


def locked(name: str, token: AccessToken | None) -> Access | None:
    """The server's tools ask for the scope ``notes.read``; there is no other tool."""
    if name not in ("echo", "regional"):
        return None
    return Access.check(name, name.title(), [{"type": "oauth2", "scopes": ["notes.read"]}], token)


@dataclass
class Rig:
    client: httpx.AsyncClient
    transport: CountingTransport
    lane: RecordingLane

    async def post(self, body: object, headers: dict[str, str] | list[tuple[str, str]] | None = None
                   ) -> httpx.Response:
        return await post(self.client, body, headers)

    @property
    def admission(self) -> Admission:
        [admission] = self.lane.seen
        return admission


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    mcp, transport = build_server()
    lane = RecordingLane()
    app = McpAdmission(transport, mcp.session_manager, access=locked, challenge=None, max_body_bytes=LIMIT,
                       lane=lane)
    async with mcp.session_manager.run():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=("203.0.113.9", 5000)),
                                     base_url="http://127.0.0.1") as client:
            yield Rig(client, transport, lane)


async def test_a_legacy_tool_call_is_one_plain_exchange_with_what_it_names_and_who_sends_it(rig: Rig):
    response = await rig.post(call("echo", {"text": "hi"}, "req-7", meta={"progressToken": "p-1",
                                                                          "openai/locale": "fr-FR"}))
    assert response.json() == {"lane": True} and rig.transport.calls == 0
    admission = rig.admission
    assert (admission.method, admission.tool, admission.version, admission.progress_token, admission.chatgpt,
            admission.client, admission.token) == ("tools/call", "echo", "2025-06-18", "p-1", True, "203.0.113.9",
                                                   None)
    assert admission.message is not None and admission.message.id == "req-7" and admission.envelope is None
    assert admission.access == Access("echo", "Echo", ("notes.read",)) and admission.refused


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", None])
async def test_every_handshake_version_and_every_method_is_plain(rig: Rig, version):
    headers = {k: v for k, v in LEGACY.items() if k != "mcp-protocol-version"}
    if version:
        headers["mcp-protocol-version"] = version
    initialize = {"protocolVersion": version or "2025-03-26", "capabilities": {},
                  "clientInfo": {"name": "t", "version": "1"}}
    for body in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 3, "method": "ping"}):
        assert (await rig.post(body, headers)).json() == {"lane": True}
    assert [(a.method, a.tool, a.access, a.version) for a in rig.lane.seen] == [
        ("initialize", None, None, version), ("tools/list", None, None, version), ("ping", None, None, version)]
    assert rig.transport.calls == 0


async def test_what_chatgpts_tool_scanner_sends_is_read_as_json(rig: Rig):
    response = await rig.post(call("echo", {"text": "hi"}), {"content-type": "application/octet-stream",
                                                             "accept": "*/*", "mcp-protocol-version": "2025-06-18"})
    assert response.json() == {"lane": True}
    assert rig.admission.request.headers["content-type"] == "application/json"


# What the SDK's transport answers itself (its status), handed to it untouched, the body replayed.
NOT_PLAIN = {"notification": 202, "response": 202, "batch": 400, "parse_error": 400, "bad_envelope": 400,
             "null_id": 202, "unknown_version": 400, "no_json_accept": 406, "json_like_content_type": 415,
             "unknown_tool": 200}


@pytest.mark.parametrize("case", list(NOT_PLAIN))
async def test_anything_but_one_json_rpc_request_the_transport_would_run_is_the_transports(rig: Rig, case: str):
    headers = dict(LEGACY)
    body: object = call("echo", {"text": "x"})
    if case == "notification":
        body = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    elif case == "response":
        body = {"jsonrpc": "2.0", "id": 4, "result": {}}
    elif case == "batch":
        body = [call("echo", {"text": "x"})]
    elif case == "parse_error":
        body = b'{"jsonrpc": "2.0", "id": 1, "method": '
    elif case == "bad_envelope":
        body = {"jsonrpc": "1.0", "id": 1, "method": "ping"}
    elif case == "null_id":  # the SDK takes an id-less-looking request for a notification
        body = {"jsonrpc": "2.0", "id": None, "method": "ping"}
    elif case == "unknown_version":
        headers["mcp-protocol-version"] = "1999-01-01"
    elif case == "no_json_accept":
        headers["accept"] = "text/event-stream"
    elif case == "json_like_content_type":  # passes the security settings, not the transport's exact test
        headers["content-type"] = "application/json-patch+json"
    if case == "unknown_tool":  # plain, but no tool of that name: nothing to check, the SDK's answer
        response = await rig.post(call("nope", {}), headers)
        assert response.json() == {"lane": True} and rig.admission.access is None
        return
    response = await rig.post(body, headers)
    assert response.status_code == NOT_PLAIN[case], response.text
    assert (rig.transport.calls, rig.lane.seen) == (1, [])
    [admission] = rig.transport.admissions  # handed down on this path too, saying it is not plain
    assert admission is not None and not admission.plain and admission.access is None


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "chunked"])
async def test_a_body_over_the_limit_is_refused_before_anything_looks_at_it(rig: Rig, declared: bool):
    if declared:
        response = await rig.post(b" " * (LIMIT + 1))
    else:
        async def chunks():
            for _ in range(5):
                yield b"x" * 1000

        response = await rig.client.post("/mcp", content=chunks(), headers=LEGACY)
    assert response.status_code == 413 and response.headers["connection"] == "close"
    assert response.json() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": f"Request body too large (limit: {LIMIT} bytes)"}}
    assert (rig.transport.calls, rig.lane.seen) == (0, [])


async def test_a_chunked_body_under_the_limit_is_read_whole(rig: Rig):
    body = json.dumps(call("echo", {"text": "in pieces"})).encode()

    async def chunks():
        yield body[:9]
        yield body[9:]

    response = await rig.client.post("/mcp", content=chunks(), headers=LEGACY)
    assert response.json() == {"lane": True} and rig.admission.tool == "echo"


async def test_a_modern_tool_call_is_plain_with_its_envelope(rig: Rig):
    headers, body = modern_call("echo", {"text": "x"})
    assert (await rig.post(body, headers)).json() == {"lane": True}
    envelope = rig.admission.envelope
    assert envelope is not None and envelope.protocol_version == "2026-07-28"
    assert (rig.admission.tool, rig.admission.version) == ("echo", "2026-07-28")


async def test_a_modern_call_whose_mcp_param_headers_agree_is_plain(rig: Rig):
    headers, body = modern_call("regional", {"region": "eu"})
    assert (await rig.post(body, headers | {"mcp-param-region": "eu"})).json() == {"lane": True}


async def test_whitespace_around_mcp_headers_is_not_part_of_their_value(rig: Rig):
    """RFC 9110 §5.5; uvicorn strips it, an ASGI server that does not hands it over as here."""
    headers, body = modern_call("regional", {"region": "eu"})
    padded = headers | {"mcp-name": " \tregional ", "mcp-param-region": " eu\t"}
    assert (await rig.post(body, padded)).json() == {"lane": True}
    assert rig.admission.request.headers["mcp-name"] == "regional"


async def test_the_sdks_transport_serves_a_call_whose_mcp_name_came_padded(rig: Rig):
    """The SDK compares the header as it came and refuses the call (400, -32020) without the
    admission's
    stripping; the transport, reached with the lane stopped, serves it."""
    rig.lane.ready = False
    headers, body = modern_call("regional", {"region": "eu"})
    response = await rig.post(body, headers | {"mcp-name": "regional  ", "mcp-param-region": "eu"})
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "eu"


MODERN_LADDER_STATUS = {"no_envelope": 400, "name_header_disagrees": 400, "repeated_routing_header": 400,
                        "param_header_disagrees": 400, "param_header_missing": 400, "repeated_param_header": 400,
                        "listen": 400, "notification": 202}


@pytest.mark.parametrize("case", list(MODERN_LADDER_STATUS))
async def test_what_the_modern_ladder_rejects_is_the_transports(rig: Rig, case: str):
    headers, body = modern_call("regional", {"region": "eu"})
    sent: dict[str, str] | list[tuple[str, str]] = headers | {"mcp-param-region": "eu"}
    if case == "no_envelope":
        del body["params"]["_meta"]
    elif case == "name_header_disagrees":
        sent = headers | {"mcp-param-region": "eu", "mcp-name": "echo"}
    elif case == "repeated_routing_header":
        sent = [*headers.items(), ("mcp-param-region", "eu"), ("mcp-method", "tools/call")]
    elif case == "param_header_disagrees":
        sent = headers | {"mcp-param-region": "us"}
    elif case == "param_header_missing":
        sent = headers
    elif case == "repeated_param_header":
        sent = [*headers.items(), ("mcp-param-region", "eu"), ("mcp-param-region", "eu")]
    elif case == "listen":
        body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"_meta": dict(ENVELOPE)}}
        sent = {**MODERN, "mcp-method": "subscriptions/listen"}
    elif case == "notification":
        body = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        sent = {**MODERN, "mcp-method": "notifications/cancelled"}
    response = await rig.post(body, sent)
    assert response.status_code == MODERN_LADDER_STATUS[case], response.text
    assert (rig.transport.calls, rig.lane.seen) == (1, [])


async def test_other_methods_than_post_are_the_transports(rig: Rig):
    response = await rig.client.delete("/mcp", headers=LEGACY)
    assert response.status_code == 405  # stateless: no session to delete
    assert (rig.transport.calls, rig.transport.admissions) == (1, [None])


async def test_a_lane_that_is_not_running_leaves_plain_exchanges_to_the_transport(rig: Rig):
    rig.lane.ready = False
    response = await rig.post(call("echo", {"text": "x"}))
    assert response.json()["result"]["content"][0]["text"] == "x"
    assert (rig.transport.calls, rig.lane.seen) == (1, [])


async def test_a_security_refusal_is_the_transports_own_answer_given_once():
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=["good.example"],
                                         allowed_origins=[])
    mcp, transport = build_server(security)
    lane = RecordingLane()
    app = McpAdmission(transport, mcp.session_manager, access=locked, challenge=None, max_body_bytes=LIMIT,
                       lane=lane)
    async with mcp.session_manager.run():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://evil.example") as c:
            response = await c.post("/mcp", content=json.dumps(call("echo", {"text": "x"})), headers=LEGACY)
    assert response.status_code == 421 and response.text == "Invalid Host header"
    # The same check object the transport runs first, answered by the admission so its warning is logged once.
    assert (transport.calls, lane.seen) == (0, [])


async def test_a_refused_call_goes_to_the_challenge_first_and_on_when_it_declines(rig: Rig):
    asked: list[str] = []

    async def challenge(admission: Admission, receive: Receive, send: Send) -> bool:
        asked.append(admission.tool or "")
        return False  # a ChatGPT request: the refusal is the tool result's

    app = McpAdmission(rig.transport, build_server()[0].session_manager, access=locked, challenge=challenge,
                       max_body_bytes=LIMIT, lane=rig.lane)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        response = await client.post("/mcp", json=call("echo", {"text": "x"}), headers=LEGACY)
    assert asked == ["echo"] and response.json() == {"lane": True}


# What the 2026-07-28 entry runs though the handshake-era transport would not (its own parser and type rule).
MODERN_VARIANTS = ["content type in capitals", "a UTF-8 BOM", "UTF-16", "an extra member"]


def _modern_variant(case: str) -> tuple[dict[str, str], bytes]:
    headers, body = modern_call("echo", {"text": "x"})
    if case == "an extra member":
        body["result"] = {}
    raw = json.dumps(body).encode()
    if case == "content type in capitals":
        headers["content-type"] = "Application/JSON"
    elif case == "a UTF-8 BOM":
        raw = b"\xef\xbb\xbf" + raw
    elif case == "UTF-16":
        raw = json.dumps(body).encode("utf-16")
    return headers, raw


@pytest.mark.parametrize("case", MODERN_VARIANTS)
async def test_a_modern_request_the_2026_entry_runs_is_plain_whatever_the_older_transport_thinks(rig: Rig, case):
    headers, raw = _modern_variant(case)
    # What the SDK's transport does with it alone: it runs the call.
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=rig.transport.app),
                                 base_url="http://127.0.0.1") as client:
        alone = await client.post("/mcp", content=raw, headers=headers)
    assert alone.status_code == 200 and alone.json()["result"]["content"][0]["text"] == "x", alone.text
    assert (await rig.post(raw, headers)).json() == {"lane": True}
    assert rig.admission.tool == "echo" and rig.admission.refused  # checked, so a plain client is challenged
