"""Pure ASGI middleware, driven with hand-built ASGI messages."""

from __future__ import annotations

import json

import pytest

from app.http.bounds import SERVER_BOUNDS, ClientBounds
from app.http.middleware import AccessLogMiddleware, McpPathAlias
from app.mcp.admission import normalise_headers

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


@pytest.mark.parametrize(("sent", "read"), [
    ([(b"content-type", b"application/octet-stream"), (b"accept", b"*/*")],
     {"content-type": "application/json", "accept": "application/json, text/event-stream"}),
    ([], {"content-type": "application/json", "accept": "application/json, text/event-stream"}),
    ([(b"content-type", b"text/plain; charset=utf-8"), (b"accept", b"text/html, */*")],
     {"content-type": "application/json", "accept": "application/json, text/event-stream"}),
    ([(b"content-type", b"application/json"), (b"accept", b"application/json")],
     {"content-type": "application/json", "accept": "application/json"}),
    ([(b"content-type", b"text/html"), (b"accept", b"text/event-stream")],
     {"content-type": "text/html", "accept": "text/event-stream"}),
], ids=["chatgpt's scanner", "none", "plain text, a wildcard among others", "proper", "other types: the SDK's"])
def test_what_clients_send_to_mcp_is_read_in_the_shape_the_transport_expects(sent, read):
    scope = _scope(headers=sent)
    normalise_headers(scope)
    assert {k.decode(): v.decode() for k, v in scope["headers"]} == read


def test_a_repeated_header_is_judged_by_its_first_value_as_the_transport_reads_it():
    scope = _scope(headers=[(b"content-type", b"text/plain"), (b"content-type", b"application/json")])
    normalise_headers(scope)
    assert scope["headers"] == [(b"content-type", b"application/json"),
                                (b"accept", b"application/json, text/event-stream")]


async def test_a_trailing_slash_on_mcp_is_served_as_mcp_not_redirected():
    async def echo_path(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": scope["path"].encode()})

    sent = await _run(McpPathAlias(echo_path), _scope(path="/mcp/"))
    assert sent[1]["body"] == b"/mcp"
    sent = await _run(McpPathAlias(echo_path), _scope(path="/mcp/x"))
    assert sent[1]["body"] == b"/mcp/x"


def _trickling(*chunks: bytes, every: float):
    """A client that sends the body's chunks ``every`` seconds apart, then waits for the end of the exchange."""
    import anyio

    pending = list(chunks)

    async def receive():
        if pending:
            await anyio.sleep(every)
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
        await anyio.sleep_forever()

    return receive


async def _collect(app, scope, receive):
    sent = []

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def test_a_body_slower_than_its_deadline_is_answered_408_and_the_app_sees_the_client_leave(json_log):
    seen = []

    async def reader(scope, receive, send):
        while (message := await receive())["type"] == "http.request" and message.get("more_body"):
            seen.append(message["body"])
        seen.append(message["type"])
        await send({"type": "http.response.start", "status": 200, "headers": []})  # dropped: answered already
        await send({"type": "http.response.body", "body": b"too late"})

    sent = await _collect(ClientBounds(reader, body_timeout=0.3), _scope(),
                          _trickling(b"a", b"b", b"c", b"d", every=0.12))
    assert seen == [b"a", b"b", "http.disconnect"]
    assert [m.get("status") for m in sent] == [408, None]
    assert dict(sent[0]["headers"])[b"connection"] == b"close"
    assert sent[1]["body"] == b"The request took too long to arrive.\n"
    assert [(e["event"], e["awaiting"]) for e in json_log() if e["event"] == "http.slow_client"] == [
        ("http.slow_client", "body")]


async def test_time_the_app_spends_not_reading_is_not_the_clients():
    import anyio

    async def slow_starter(scope, receive, send):
        await anyio.sleep(0.4)  # longer than the deadline, before the first read
        body = b""
        while (message := await receive())["type"] == "http.request":
            body += message["body"]
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    sent = await _collect(ClientBounds(slow_starter, body_timeout=0.3), _scope(), _trickling(b"a", b"b", every=0.1))
    assert [sent[0]["status"], sent[1]["body"]] == [200, b"ab"]


async def test_a_server_that_keeps_the_bounds_itself_is_left_to_it():
    scope = {**_scope(headers=[(b"x-big", b"a" * 17_000)]), "extensions": {SERVER_BOUNDS: {}}}
    sent = await _collect(ClientBounds(_read_all, body_timeout=0.1), scope, _trickling(b"a", b"b", every=0.15))
    assert [m.get("status") for m in sent] == [200, None]


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


@pytest.mark.parametrize(("value", "status"), [(16_000, 200), (17_000, 431)])
async def test_a_head_past_the_bound_is_refused_with_431_before_the_app_sees_it(value: int, status: int):
    scope = {**_scope(method="GET", path="/x"), "raw_path": b"/x", "query_string": b"",
             "headers": [(b"host", b"x"), (b"x-big", b"a" * value)]}
    sent = await _run(ClientBounds(_read_all, body_timeout=30), scope)
    assert sent[0]["status"] == status
    if status == 431:
        assert dict(sent[0]["headers"])[b"connection"] == b"close"
