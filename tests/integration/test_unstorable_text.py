"""A NUL or an unpaired surrogate in any string argument of any tool: refused before the tool runs.

PostgreSQL refuses NUL in text (a driver error deep inside a tool: a traceback, and "Error executing tool"
for the person), and an unpaired surrogate is not Unicode text at all. Every tool the server lists, every
string its input schema declares (nested ones too: ``file.file_id``), each character, both eras of the
protocol, over real HTTP with a token that holds every scope; on SQLite and on PostgreSQL (CI's second leg).
What must hold: an ``isError`` result naming the argument, nothing fetched, no row written, no traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.server.auth.provider import AccessToken
from sqlalchemy import create_engine, inspect, text

from app.main import create_app
from app.settings import load_settings
from tests.demos import DEMOS
from tests.fakes import StaticTokenVerifier
from tests.filehost import FileServer, serving_files
from tests.serving import serving

pytestmark = pytest.mark.demo(*DEMOS)

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
BAD = {"nul": "\x00", "surrogate": "\ud800"}


def _post(mcp_url: str, version: str, method: str, params: dict[str, Any], token: str | None = None) -> httpx.Response:
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": version}
    if version == MODERN:
        params = {**params, "_meta": {**params.get("_meta", {}), **ENVELOPE}}
        named = isinstance(params.get("name"), str)
        headers |= {"mcp-method": method, **({"mcp-name": params["name"]} if named else {})}
    if token:
        headers["authorization"] = f"Bearer {token}"
    # json.dumps writes a lone surrogate as its \ud800 escape: valid JSON text, as a client would send it.
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    return httpx.post(mcp_url, content=body, headers=headers, timeout=30)


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return _resolve(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:  # Optional[X]: X
        return _resolve(next(s for s in schema["anyOf"] if s.get("type") != "null"), defs)
    return schema


def _sample(schema: dict[str, Any], defs: dict[str, Any], name: str, files: FileServer) -> Any:
    """A value the schema accepts (so that only the injected character is wrong)."""
    schema = _resolve(schema, defs)
    kind = schema.get("type")
    if kind == "object":
        return {key: _sample(sub, defs, key, files) for key, sub in schema.get("properties", {}).items()
                if key in schema.get("required", ())}
    if kind == "array":
        return [_sample(schema["items"], defs, name, files) for _ in range(max(1, schema.get("minItems", 1)))]
    if kind == "integer":
        return schema.get("minimum", 1)
    if kind == "string":
        if "enum" in schema:
            return schema["enum"][0]
        if name == "download_url":
            return files.offer(b"hello", "text/plain")
        return "https://example.com/a" if schema.get("format") == "uri" else "abc"
    return None


def _string_paths(schema: dict[str, Any], defs: dict[str, Any], path: tuple[Any, ...] = ()) -> Iterator[tuple]:
    """Each string the schema declares, required or not, as a path into the arguments."""
    schema = _resolve(schema, defs)
    if schema.get("type") == "string":
        yield path
    elif schema.get("type") == "object":
        for key, sub in schema.get("properties", {}).items():
            yield from _string_paths(sub, defs, (*path, key))
    elif schema.get("type") == "array":
        yield from _string_paths(schema["items"], defs, (*path, 0))


def _with(arguments: dict[str, Any], path: tuple[Any, ...], value: str) -> dict[str, Any]:
    arguments = json.loads(json.dumps(arguments))
    holder: Any = arguments
    for step, after in zip(path[:-1], path[1:], strict=True):
        empty: Any = [] if isinstance(after, int) else {}
        if isinstance(step, int):
            holder.extend(empty for _ in range(step + 1 - len(holder)))
            holder = holder[step]
        else:
            holder = holder.setdefault(step, empty)
    if isinstance(path[-1], int):
        holder.extend(None for _ in range(path[-1] + 1 - len(holder)))
    holder[path[-1]] = value
    return arguments


def _shown(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path))


def _row_counts(database_url: str) -> dict[str, int]:
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            return {t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one()
                    for t in inspect(conn).get_table_names()}
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def files() -> Iterator[FileServer]:
    with serving_files() as server:
        yield server


@pytest.mark.parametrize("version", ["2025-06-18", MODERN])
def test_a_character_no_database_stores_is_refused_in_every_string_of_every_tool(database_url: str, json_log,
                                                                                 files: FileServer, version: str):
    holder: dict[str, Any] = {}

    def build(base_url: str):
        holder["mcp"] = mcp_url = f"{base_url}/mcp"
        holder["verifier"] = verifier = StaticTokenVerifier()
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json",
                                 outbound_allowlist=[f"127.0.0.1:{files.server_address[1]}"], _env_file=None)
        verifier.tokens["all"] = AccessToken(token="all", client_id="chatgpt", scopes=[], subject="acct-nul",
                                             resource=mcp_url)
        return create_app(settings, token_verifier=verifier)

    with serving(build) as _:
        mcp_url = holder["mcp"]
        tools = _post(mcp_url, version, "tools/list", {}).json()["result"]["tools"]
        scopes = {s for t in tools for scheme in t.get("securitySchemes", []) for s in scheme.get("scopes", [])}
        holder["verifier"].tokens["all"].scopes[:] = sorted(scopes)
        before, hits = _row_counts(database_url), files.hits
        cases = 0
        for tool in tools:
            schema, defs = tool["inputSchema"], tool["inputSchema"].get("$defs", {})
            valid = _sample(schema, defs, "", files)
            for path in _string_paths(schema, defs):
                for what, character in BAD.items():
                    arguments = _with(valid, path, f"ab{character}cd")
                    response = _post(mcp_url, version, "tools/call", {"name": tool["name"], "arguments": arguments},
                                     token="all")
                    cases += 1
                    if version != MODERN and what == "surrogate":
                        # The handshake-era transport's JSON parser refuses the escape itself: no tool is reached.
                        assert response.status_code == 400 and response.json()["error"]["code"] == -32700
                        continue
                    result = response.json()["result"]
                    message = result["content"][0]["text"]
                    assert result["isError"] is True, (tool["name"], path, result)
                    assert f"The text in {_shown(path)} contains" in message, message
                    assert ("NUL character" if what == "nul" else "unpaired surrogate") in message, message
                    assert f"Call {tool['name']} again" in result["content"][1]["text"]
        assert cases >= 30, cases  # every demo's strings: a schema walk that found none would prove nothing
        assert files.hits == hits  # nothing fetched
        assert _row_counts(database_url) == before  # nothing written
        # The request _meta a tool reads (recommend_cafe: the city of openai/userLocation) is held to the same rule.
        for what, character in BAD.items():
            meta = {"openai/userLocation": {"city": f"Par{character}is", "country": "FR"}}
            response = _post(mcp_url, version, "tools/call", {"name": "recommend_cafe", "arguments": {},
                                                             "_meta": meta})
            if version != MODERN and what == "surrogate":
                assert response.json()["error"]["code"] == -32700
                continue
            result = response.json()["result"]
            assert result["isError"] is True, result
            assert "The text in _meta.openai/userLocation.city contains" in result["content"][0]["text"]
            assert "metadata" in result["content"][1]["text"]
        # Where the character is, said whole in the person's language ("a key of the arguments"
        # sliced to 128 characters was English again).
        keyed = _post(mcp_url, version, "tools/call", {"name": "get_zoo_animals",
                                                       "arguments": {"a\x00b": 1},
                                                       "_meta": {"openai/locale": "fr-FR"}})
        told = keyed.json()["result"]["content"][0]["text"]
        assert told.startswith("Le texte dans une clé des arguments contient un caractère NUL"), (
            told)
        # A name that is not a string gets the SDK's own error, as before (invalid params; on 2026-07-28 the
        # routing header's mismatch comes first): not a crash of the check.
        not_a_name = _post(mcp_url, version, "tools/call", {"name": ["search"], "arguments": {"q": "a\x00"}})
        assert not_a_name.json()["error"]["code"] == (-32020 if version == MODERN else -32602), not_a_name.text
    lines = json_log()
    assert not [e for e in lines if e.get("level") in ("error", "critical") or "exception" in e], lines
    assert sum(e.get("event") == "tool.unstorable_text" for e in lines) == cases - (
        0 if version == MODERN else cases // 2) + (3 if version == MODERN else 2)
