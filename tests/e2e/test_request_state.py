"""A multi-round-trip request (an ``input_required`` result, SEP-2322) across a fleet: the state one
server sealed is opened by another that shares APP_REQUEST_STATE_KEYS, and by no other; a state
changed on the way is refused. Two real server processes (tests/e2e/probe_server.py, its
``probe_confirm`` tool) share a database, each with a var dir of its own (so a key derived from a
generated secret would differ).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.server import LiveServer

# The state is sealed and checked in the MCP layer; the database behind the servers is never in question.
pytestmark = pytest.mark.any_database
KEYS = ",".join(secrets.token_urlsafe(32) for _ in range(2))
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "fleet-test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "probe_confirm",
}
ACCEPTED = {"confirm": {"action": "accept", "content": {"ok": True}}}


def _server(database_url: str, tmp_path_factory: pytest.TempPathFactory, **env: str) -> LiveServer:
    logs = tmp_path_factory.mktemp("fleet")
    return LiveServer(
        database_url,
        logs / "server.log",
        module="tests.e2e.probe_server",
        extra_env={"APP_VAR_DIR": str(logs / "var"), **env},
    ).start()


@pytest.fixture(scope="module")
def fleet(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, LiveServer, LiveServer]]:
    """Two servers sharing the keys, and one with a key of its own (none set: derived from its own
    generated secret)."""
    servers: list[LiveServer] = []
    try:
        for env in ({"APP_REQUEST_STATE_KEYS": KEYS}, {"APP_REQUEST_STATE_KEYS": KEYS}, {}):
            servers.append(_server(database_url, tmp_path_factory, **env))
        yield servers[0], servers[1], servers[2]
    finally:
        for server in servers:
            server.stop()


def _confirm(server: LiveServer, **more: object) -> httpx.Response:
    params = {"name": "probe_confirm", "arguments": {"text": "order 42"}, "_meta": ENVELOPE, **more}
    return httpx.post(
        server.mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        headers=HEADERS,
        timeout=15,
    )


def _asked(server: LiveServer) -> str:
    asked = _confirm(server)
    assert asked.status_code == 200, asked.text
    result = asked.json()["result"]
    assert result["resultType"] == "input_required"
    assert result["inputRequests"]["confirm"]["method"] == "elicitation/create"
    return result["requestState"]


def test_a_question_asked_by_one_server_is_answered_on_another(fleet):
    first, second, _ = fleet
    state = _asked(first)
    assert "order 42" not in state  # sealed, not merely signed
    done = _confirm(second, inputResponses=ACCEPTED, requestState=state)
    assert done.status_code == 200, done.text
    result = done.json()["result"]
    assert result["structuredContent"] == {"text": "order 42", "confirmed": True}
    asker, answerer = (
        int(pid)
        for pid in result["content"][0]["text"]
        .removesuffix(")")
        .split("asked by ")[1]
        .split(", answered by ")
    )
    assert asker == first.process.pid != answerer == second.process.pid


def test_a_changed_byte_in_the_state_is_refused(fleet):
    first, second, _ = fleet
    state = _asked(first)
    middle = len(state) // 2
    flipped = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]
    refused = _confirm(second, inputResponses=ACCEPTED, requestState=flipped)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == -32602
    assert refused.json()["error"]["data"] == {"reason": "invalid_request_state"}


def test_the_state_is_bound_to_the_arguments_it_was_asked_with(fleet):
    first, second, _ = fleet
    state = _asked(first)
    params = {
        "name": "probe_confirm",
        "arguments": {"text": "order 43"},
        "_meta": ENVELOPE,
        "inputResponses": ACCEPTED,
        "requestState": state,
    }
    other = httpx.post(
        second.mcp_url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
        headers=HEADERS,
        timeout=15,
    )
    assert other.status_code == 400, other.text
    assert other.json()["error"]["data"] == {"reason": "invalid_request_state"}


def test_a_server_without_the_shared_keys_cannot_open_the_state(fleet):
    first, _, stranger = fleet
    refused = _confirm(stranger, inputResponses=ACCEPTED, requestState=_asked(first))
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["data"] == {"reason": "invalid_request_state"}


def test_a_client_of_an_older_protocol_is_told_the_question_cannot_be_asked(fleet):
    first, _, _ = fleet
    legacy = httpx.post(
        first.mcp_url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "probe_confirm", "arguments": {"text": "order 42"}},
        },
        headers={
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-11-25",
        },
        timeout=15,
    )
    assert legacy.status_code == 200, legacy.text
    result = legacy.json()["result"]
    assert result["isError"] is True
    assert "needs an answer from the user first" in result["content"][0]["text"]
    assert "MCP 2025-11-25" in result["content"][0]["text"]
    assert "do not call the tool again" in result["content"][1]["text"]


def test_an_answer_holding_what_no_database_keeps_is_refused_before_the_tool_runs(fleet):
    first, _, _ = fleet
    answer = {"confirm": {"action": "accept", "content": {"ok": True, "note": "a\u0000b"}}}
    refused = _confirm(first, inputResponses=answer, requestState=_asked(first))
    assert refused.status_code == 200, refused.text
    result = refused.json()["result"]
    assert result["isError"] is True
    assert "The text in inputResponses.confirm.content.note contains a NUL character" in (
        result["content"][0]["text"])
