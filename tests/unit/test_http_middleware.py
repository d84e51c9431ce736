"""Pure ASGI middleware, driven with hand-built ASGI messages."""

from __future__ import annotations

import json

import pytest

from app.http.middleware import AccessLogMiddleware, McpRequestNormalizer

pytestmark = pytest.mark.anyio


def _scope(path="/mcp", method="POST", headers=()):
    return {"type": "http", "method": method, "path": path, "headers": list(headers)}


async def _run(app, scope, body_chunks=(b"{}",)):
    chunks = list(body_chunks)
    sent = []

    async def receive():
        if chunks:
            chunk = chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def _echo_headers(scope, receive, send):
    body = json.dumps({k.decode(): v.decode() for k, v in scope["headers"]}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


async def _read_all(scope, receive, send):
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_octet_stream_and_wildcard_accept_become_what_the_transport_expects():
    sent = await _run(McpRequestNormalizer(_echo_headers),
                      _scope(headers=[(b"content-type", b"application/octet-stream"), (b"accept", b"*/*")]))
    headers = json.loads(sent[1]["body"])
    assert headers["content-type"] == "application/json"
    assert headers["accept"] == "application/json, text/event-stream"


async def test_proper_headers_and_other_paths_are_left_alone():
    sent = await _run(McpRequestNormalizer(_echo_headers),
                      _scope(path="/other", headers=[(b"content-type", b"application/octet-stream")]))
    assert json.loads(sent[1]["body"])["content-type"] == "application/octet-stream"
    sent = await _run(McpRequestNormalizer(_echo_headers),
                      _scope(headers=[(b"content-type", b"application/json"), (b"accept", b"application/json")]))
    assert json.loads(sent[1]["body"])["accept"] == "application/json"


async def test_a_trailing_slash_on_mcp_is_served_as_mcp_not_redirected():
    async def echo_path(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": scope["path"].encode()})

    sent = await _run(McpRequestNormalizer(echo_path), _scope(path="/mcp/"))
    assert sent[1]["body"] == b"/mcp"
    sent = await _run(McpRequestNormalizer(echo_path), _scope(path="/mcp/x"))
    assert sent[1]["body"] == b"/mcp/x"


async def test_an_unhandled_exception_becomes_a_json_500_with_the_request_id():
    async def boom(scope, receive, send):
        raise RuntimeError("secret internals")

    sent = await _run(AccessLogMiddleware(boom), _scope(headers=[(b"x-request-id", b"abc-1")]))
    assert sent[0]["status"] == 500
    body = json.loads(sent[1]["body"])
    assert body == {"error": "internal_error", "request_id": "abc-1"}


async def test_an_exception_after_the_client_left_is_logged_as_its_leaving_not_as_a_500(json_log):
    async def reads_then_fails(scope, receive, send):
        while (await receive())["type"] != "http.disconnect":
            pass
        raise RuntimeError("the body never came")

    sent = await _run(AccessLogMiddleware(reads_then_fails), _scope())
    events = json_log()
    assert sent == []  # nobody to answer
    assert [(e["event"], e.get("error"), e.get("status")) for e in events] == [
        ("http.client_gone", "RuntimeError", None), ("http.request", None, 499)]


async def test_a_hostile_request_id_is_replaced():
    sent = await _run(AccessLogMiddleware(_read_all), _scope(headers=[(b"x-request-id", b"bad id\n\x00")]))
    rid = dict(sent[0]["headers"])[b"x-request-id"].decode()
    assert rid != "bad id\n\x00" and len(rid) == 32
