"""The speed-up package's single-exchange lane (app/tuning/lane.py) behind the admission, in front of a real SDK
transport: what it answers, on both protocol generations, and that it answers as the transport would.

The transport is the SDK's own stateless JSON app, wrapped only to count what reaches it. Which requests the
admission hands to a lane at all is the core's business (tests/integration/test_admission.py). That the lane's
answers equal the transport's, request by request, is pinned over real HTTP in
``tests/e2e/test_fast_lane_parity.py``.
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated

import httpx
import pytest
import typing_extensions
from mcp.server.connection import Connection
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import modern_error_data, serve_one
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import DispatchContext
from mcp.shared.exceptions import MCPError
from mcp_types import ErrorData
from pydantic import BaseModel, Field
from starlette.types import ASGIApp

from app.mcp.admission import McpAdmission
from app.tuning.lane import ExchangeContext, SingleExchangeLane
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

pytestmark = [pytest.mark.anyio, pytest.mark.tuning]


def build_server() -> MCPServer:
    mcp = MCPServer("lane-test")

    @mcp.tool(name="echo", description="Echo")
    async def echo(text: str) -> str:
        return text

    @mcp.tool(name="explode", description="Raises something no handler maps")
    async def explode() -> str:
        raise RuntimeError("secret internal detail /etc/passwd")

    @mcp.tool(name="chatty", description="Reports progress and logs mid-request")
    async def chatty(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await ctx.info("halfway")
        return "done"

    @mcp.tool(name="version", description="The protocol version this request is served at")
    async def version(ctx: Context) -> str:
        return str(ctx.protocol_version)

    @mcp.tool(name="regional", description="An argument the client repeats in an Mcp-Param header")
    async def regional(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return region

    return mcp


@dataclass
class Rig:
    client: httpx.AsyncClient
    fallback: CountingTransport
    lane: SingleExchangeLane

    async def post(self, body: object, headers: dict[str, str] | list[tuple[str, str]] | None = None
                   ) -> httpx.Response:
        return await post(self.client, body, headers)

    async def post_to_the_transport(self, body: object, headers: dict[str, str] | list[tuple[str, str]]
                                    ) -> httpx.Response:
        """The same request, straight to the SDK transport: what it would have answered."""
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=self.fallback.app),
                                     base_url="http://127.0.0.1") as client:
            return await client.post("/mcp", content=json.dumps(body).encode(), headers=headers)


def admitted(mcp: MCPServer, fallback: ASGIApp, lane: SingleExchangeLane, max_body_bytes: int = 4096) -> ASGIApp:
    """The admission in front of the transport, handing plain exchanges to ``lane``."""
    return McpAdmission(fallback, mcp.session_manager, access=lambda name, token: None, challenge=None,
                        max_body_bytes=max_body_bytes, lane=lane)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    mcp = build_server()
    fallback = CountingTransport(mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                                        json_response=True, max_request_body_size=4096,
                                                        transport_security=NO_REBINDING_CHECK))
    lane = SingleExchangeLane(mcp.session_manager)
    async with mcp.session_manager.run(), lane.run():
        transport = httpx.ASGITransport(app=admitted(mcp, fallback, lane))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield Rig(client, fallback, lane)


def on_ping(answer: Callable[[], object]) -> Callable:
    """An MCP middleware that answers ``ping`` with what ``answer`` returns (or raises), as a broken middleware or a
    low-level handler would."""
    async def middleware(ctx, call_next):
        return answer() if ctx.method == "ping" else await call_next(ctx)

    return middleware


def raising(exc: Exception) -> Callable[[], object]:
    def answer() -> object:
        raise exc

    return answer


async def test_a_legacy_tool_call_is_answered_without_the_sdk_transport(rig: Rig):
    response = await rig.post(call("echo", {"text": "hi"}, "req-7"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["id"] == "req-7" and body["result"]["content"][0]["text"] == "hi"
    assert rig.fallback.calls == 0


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", None])
async def test_initialize_list_and_ping_are_answered_in_the_lane_on_every_handshake_version(rig: Rig, version):
    headers = {k: v for k, v in LEGACY.items() if k != "mcp-protocol-version"}
    if version:
        headers["mcp-protocol-version"] = version
    init = await rig.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version or "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        headers)
    tools = await rig.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
    ping = await rig.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers)
    assert init.json()["result"]["protocolVersion"] == (version or "2025-03-26")
    assert init.json()["result"]["serverInfo"]["name"] == "lane-test"
    assert {t["name"] for t in tools.json()["result"]["tools"]} == {"echo", "explode", "chatty", "version", "regional"}
    assert ping.json() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert rig.fallback.calls == 0


@pytest.mark.parametrize("header,served_at", [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                                              ("2024-11-05", "2024-11-05"), (None, "2025-03-26")])
async def test_a_request_is_served_at_the_version_its_header_names_or_the_specs_default(rig: Rig, header, served_at):
    headers = {k: v for k, v in LEGACY.items() if k != "mcp-protocol-version"}
    if header:
        headers["mcp-protocol-version"] = header
    response = await rig.post(call("version", {}), headers)
    assert response.json()["result"]["content"][0]["text"] == served_at
    assert rig.fallback.calls == 0


async def test_sdk_validation_errors_come_back_from_the_lane_as_the_sdk_words_them(rig: Rig):
    unknown_method = await rig.post({"jsonrpc": "2.0", "id": 1, "method": "no/such"})
    bad_params = await rig.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": 5}})
    bad_arguments = await rig.post(call("echo", {"text": 5}, 3))
    assert unknown_method.json()["error"]["code"] == -32601
    assert bad_params.json()["error"]["code"] == -32602
    assert bad_arguments.json()["result"]["isError"] is True
    assert rig.fallback.calls == 0


async def test_an_unmapped_handler_exception_is_an_internal_error_without_its_text(rig: Rig):
    # MCPServer turns a tool's exception into an error result; the lane's own boundary is for
    # what escapes the whole chain, e.g. a broken middleware. Call a method whose handler raises.
    rig.lane.server.middleware.append(on_ping(raising(RuntimeError("secret internal detail /etc/passwd"))))
    response = await rig.post({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": "Internal error"}}
    assert "passwd" not in response.text


async def test_notifications_sent_mid_request_are_dropped_and_the_answer_still_arrives(rig: Rig):
    request = call("chatty", {})
    request["params"]["_meta"] = {"progressToken": "p1"}
    response = await rig.post(request)
    assert response.json()["result"]["content"][0]["text"] == "done"
    assert rig.fallback.calls == 0


async def test_a_modern_tool_call_is_answered_without_the_sdk_transport(rig: Rig):
    headers, body = modern_call("version", {}, "req-8")
    response = await rig.post(body, headers)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert response.json()["id"] == "req-8"
    assert response.json()["result"]["content"][0]["text"] == "2026-07-28"
    assert rig.fallback.calls == 0
    assert response.json() == (await rig.post_to_the_transport(body, headers)).json()


async def test_a_modern_call_whose_mcp_param_headers_agree_is_answered_in_the_lane(rig: Rig):
    headers, body = modern_call("regional", {"region": "eu"})
    response = await rig.post(body, headers | {"mcp-param-region": "eu"})
    assert response.json()["result"]["content"][0]["text"] == "eu"
    assert rig.fallback.calls == 0


async def test_a_modern_unmapped_handler_exception_is_the_sdks_internal_error_with_its_status(rig: Rig):
    rig.lane.server.middleware.append(on_ping(raising(RuntimeError("secret internal detail /etc/passwd"))))
    body = {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"_meta": dict(ENVELOPE)}}
    headers = {**MODERN, "mcp-method": "ping"}
    response = await rig.post(body, headers)
    expected = await rig.post_to_the_transport(body, headers)
    assert rig.fallback.calls == 0
    assert (response.status_code, response.json()) == (expected.status_code, expected.json())
    assert response.json()["error"]["code"] == -32603 and "passwd" not in response.text


async def test_a_modern_protocol_error_is_rendered_as_the_sdk_renders_it(rig: Rig):
    error = MCPError(-32000, "not now")
    error.error = ErrorData(code=-32000, message="not now", data=None)  # a null set on purpose: dropped
    rig.lane.server.middleware.append(on_ping(raising(error)))
    body = {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"_meta": dict(ENVELOPE)}}
    headers = {**MODERN, "mcp-method": "ping"}
    response = await rig.post(body, headers)
    expected = await rig.post_to_the_transport(body, headers)
    assert rig.fallback.calls == 0
    assert response.json() == {"jsonrpc": "2.0", "id": 4, "error": {"code": -32000, "message": "not now"}}
    assert (response.status_code, response.json()) == (expected.status_code, expected.json())


async def test_a_modern_validation_error_has_the_status_the_sdk_maps_it_to(rig: Rig):
    headers, body = modern_call("echo", {})
    body["params"]["arguments"] = [1, 2]
    response = await rig.post(body, headers)
    expected = await rig.post_to_the_transport(body, headers)
    assert rig.fallback.calls == 0
    assert response.json()["error"]["code"] == -32602
    assert (response.status_code, response.json()) == (expected.status_code, expected.json())


def test_a_server_with_a_lifespan_is_refused_with_the_reason():
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(_):
        yield {"pool": object()}

    mcp = MCPServer("with-lifespan", lifespan=lifespan)
    mcp.streamable_http_app(stateless_http=True, json_response=True)
    with pytest.raises(ValueError, match="without a lifespan"):
        SingleExchangeLane(mcp.session_manager)


@pytest.mark.parametrize("stateless,json_response", [(False, True), (True, False)])
def test_a_stateful_or_sse_transport_is_refused(stateless: bool, json_response: bool):
    mcp = build_server()
    mcp.streamable_http_app(stateless_http=stateless, json_response=json_response)
    with pytest.raises(ValueError, match="stateless, JSON-response transport only"):
        SingleExchangeLane(mcp.session_manager)


def test_the_sdk_pieces_the_lane_is_built_on_keep_their_shape():
    """Fails loudly when an SDK upgrade moves what the lane relies on (all public names)."""
    assert sorted(typing_extensions.get_protocol_members(DispatchContext)) == [
        "can_send_request", "cancel_requested", "message_metadata", "notify", "progress", "request_id",
        "send_raw_request", "transport"]
    context_fields = {"can_send_request", "cancel_requested", "message_metadata", "notify", "progress",
                      "request_id", "send_raw_request", "transport"}
    assert context_fields <= set(dir(ExchangeContext)) | set(ExchangeContext.__dataclass_fields__)
    assert list(inspect.signature(serve_one).parameters) == [
        "server", "dctx", "method", "params", "connection", "lifespan_state"]
    assert list(inspect.signature(Connection.from_envelope).parameters) == [
        "protocol_version", "client_info", "client_capabilities", "outbound"]
    mcp = MCPServer("shape")
    mcp.streamable_http_app(stateless_http=True, json_response=True, max_request_body_size=1234)
    manager = mcp.session_manager
    assert isinstance(manager, StreamableHTTPSessionManager)
    assert (manager.stateless, manager.json_response, manager.max_request_body_size) == (True, True, 1234)
    assert manager.security_settings is not None and callable(manager.app.lifespan)
    # The 2026-07-28 half: the SDK's error mapping.
    assert list(inspect.signature(modern_error_data).parameters) == ["exc"]


class Inner(BaseModel):
    a: int
    b: str | None = None


# What a middleware or a low-level handler may leave in a result dict (the SDK copies such a dict as it is).
RAW_VALUES = {
    "nan": float("nan"), "infinity": float("inf"), "a model": Inner(a=1), "a model with a null set": Inner(a=1, b=None),
    "a datetime": datetime.datetime(2026, 1, 2),
    "a decimal": decimal.Decimal("1.50"), "a uuid": uuid.UUID(int=1), "bytes": b"abc", "a tuple": (1, 2),
    "a big float": 1e16, "a lone surrogate": "\ud800",
}


def _ping(version: str, id_: int = 9) -> tuple[dict, dict[str, str]]:
    if version == "2026-07-28":
        return ({"jsonrpc": "2.0", "id": id_, "method": "ping", "params": {"_meta": dict(ENVELOPE)}},
                {**MODERN, "mcp-method": "ping"})
    return {"jsonrpc": "2.0", "id": id_, "method": "ping"}, LEGACY


# The handshake-era transport fails a lone surrogate with HTTP 500; the lane answers it, escaped, as the 2026-07-28
# entry does (tested below).
RAW_CASES = [(kind, version) for kind in RAW_VALUES for version in ("2026-07-28", "2025-06-18")
             if (kind, version) != ("a lone surrogate", "2025-06-18")]


@pytest.mark.parametrize("kind,version", RAW_CASES)
async def test_a_raw_result_dict_is_encoded_as_the_sdk_encodes_it(rig: Rig, kind: str, version: str):
    rig.lane.server.middleware.append(on_ping(lambda: {"v": RAW_VALUES[kind]}))
    body, headers = _ping(version)
    lane = await rig.post(body, headers)
    sdk = await rig.post_to_the_transport(body, headers)
    assert rig.fallback.calls == 0
    # Strictly JSON (no NaN literal), and the same value as the SDK's.
    strict = {"parse_constant": lambda constant: pytest.fail(f"{constant} is not JSON")}
    assert (lane.status_code, json.loads(lane.text, **strict)) == (sdk.status_code, json.loads(sdk.text, **strict))


async def test_an_error_whose_message_utf8_cannot_carry_is_answered_as_the_sdk_answers_it(rig: Rig):
    rig.lane.server.middleware.append(on_ping(raising(MCPError(-32000, "bad \ud800 name"))))
    body, headers = _ping("2026-07-28")
    lane = await rig.post(body, headers)
    sdk = await rig.post_to_the_transport(body, headers)
    assert rig.fallback.calls == 0
    assert lane.status_code == sdk.status_code and lane.json() == sdk.json()
    assert lane.json()["error"]["message"] == "bad \ud800 name"


@pytest.mark.parametrize("failing", ["result", "error"])
async def test_on_the_handshake_paths_what_utf8_cannot_carry_is_answered_escaped(rig: Rig, failing: str):
    answer = raising(MCPError(-32000, "bad \ud800 name")) if failing == "error" else (lambda: {"v": "\ud800"})
    rig.lane.server.middleware.append(on_ping(answer))
    body, headers = _ping("2025-06-18")
    response = await rig.post(body, headers)
    assert response.status_code == 200 and b"\\ud800" in response.content
    if failing == "error":
        assert response.json()["error"] == {"code": -32000, "message": "bad \ud800 name"}
    else:
        assert response.json()["result"] == {"v": "\ud800"}


@pytest.mark.parametrize("version", ["2026-07-28", "2025-06-18"])
async def test_a_result_no_json_can_hold_is_an_internal_error_without_its_text(rig: Rig, version: str):
    rig.lane.server.middleware.append(on_ping(lambda: {"v": object()}))
    body, headers = _ping(version)
    response = await rig.post(body, headers)
    assert rig.fallback.calls == 0
    assert (response.status_code, response.json()) == (
        200, {"jsonrpc": "2.0", "id": 9, "error": {"code": -32603, "message": "Internal error"}})
