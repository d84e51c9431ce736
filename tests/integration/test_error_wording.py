"""Every tool's arguments refused, said for the person and the model, never in the SDK's or
pydantic's words (tests/wording.py): each tool the server lists, called over real HTTP on both eras
with a token holding every scope, without its required arguments, with each argument of the wrong
type, too long, and out of range (an argument a tool does not take is ignored, as the SDK does).
Each answer is an ``isError`` result: a text for the person, then one for the model naming the tool
to call again (or what to ask first, where a form cannot be shown: no client here shows one)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.server.auth.provider import AccessToken

from app.main import create_app
from app.settings import load_settings
from tests.conftest import ROOT
from tests.demos import DEMOS
from tests.fakes import StaticTokenVerifier
from tests.serving import serving
from tests.wording import library_wording

pytestmark = pytest.mark.demo(*DEMOS)
MODERN = "2026-07-28"


def _post(mcp_url: str, version: str, method: str, params: dict[str, Any],
          locale: str | None = None) -> dict[str, Any]:
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": version, "authorization": "Bearer all"}
    meta: dict[str, Any] = {"openai/locale": locale} if locale else {}
    if version == MODERN:
        meta |= {"io.modelcontextprotocol/protocolVersion": MODERN,
                 "io.modelcontextprotocol/clientCapabilities": {}}
    if meta:
        params = {**params, "_meta": meta}
    if version == MODERN:
        named = {"mcp-name": params["name"]} if "name" in params else {}
        headers |= {"mcp-method": method, **named}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    response = httpx.post(mcp_url, content=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        return _resolve(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "anyOf" in schema:  # Optional[X]: X
        return _resolve(next(s for s in schema["anyOf"] if s.get("type") != "null"), defs)
    return schema


WRONG = {"string": 12345, "integer": "many", "number": "many", "boolean": [1], "array": "several",
         "object": "something"}


def _bad_arguments(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Argument sets the schema refuses, each named; none holds a valid value for a required
    argument, so no tool does its work."""
    defs = schema.get("$defs", {})
    properties = schema.get("properties", {})
    if schema.get("required"):
        yield "nothing", {}
    for name, declared in properties.items():
        prop = _resolve(declared, defs)
        kind = prop.get("type")
        if kind in WRONG:
            yield f"{name} of the wrong type", {name: WRONG[kind]}
        if kind == "string" and "maxLength" in prop:
            yield f"{name} too long", {name: "x" * (prop["maxLength"] + 1)}
        if kind == "integer" and "maximum" in prop:
            yield f"{name} too large", {name: prop["maximum"] + 1}


def _english_parts() -> set[str]:
    """The English of every catalogue (app/**/wording.json), between placeholders: parts of three
    words or more, which no translation keeps."""
    parts = set()
    for catalogue in (ROOT / "app").rglob("wording.json"):
        for english in json.loads(catalogue.read_text(encoding="utf-8")):
            parts |= {part.strip(" .:;,()") for part in re.split(r"\{[^}]+\}", english)}
    return {part for part in parts if len(part.split()) >= 3}


ENGLISH = _english_parts()

# Each protocol era in English; each other language on the newest (ChatGPT's openai/locale).
SPOKEN = [("2025-06-18", "en-US"), (MODERN, "en-US"), (MODERN, "es-ES"), (MODERN, "fr-FR"),
          (MODERN, "pt-BR"), (MODERN, "zh-CN")]


@pytest.mark.parametrize(("version", "locale"), SPOKEN)
def test_refused_arguments_of_every_tool_are_said_in_plain_words(database_url: str, version: str,
                                                                 locale: str):
    holder: dict[str, Any] = {}

    def build(base_url: str):
        holder["mcp"] = url = f"{base_url}/mcp"
        holder["verifier"] = verifier = StaticTokenVerifier()
        settings = load_settings(database_url=database_url, base_url=base_url, _env_file=None)
        verifier.tokens["all"] = AccessToken(token="all", client_id="chatgpt", scopes=[],
                                             subject="acct-words", resource=url)
        return create_app(settings, token_verifier=verifier)

    with serving(build):
        _refused_in_plain_words(holder["mcp"], version, holder["verifier"], locale)


def _refused_in_plain_words(mcp_url: str, version: str, verifier: StaticTokenVerifier,
                            locale: str) -> None:
    tools = _post(mcp_url, version, "tools/list", {})["tools"]
    verifier.tokens["all"].scopes[:] = sorted({s for t in tools for scheme in t.get(
        "securitySchemes", []) for s in scheme.get("scopes", [])})
    cases = 0
    for tool in tools:
        for what, arguments in _bad_arguments(tool["inputSchema"]):
            result = _post(mcp_url, version, "tools/call", {"name": tool["name"],
                                                            "arguments": arguments}, locale)
            cases += 1
            where = (tool["name"], what, result)
            assert result.get("isError") is True, where
            assert library_wording(result) is None, where
            person, model = (block["text"] for block in result["content"])
            assert person and model, where
            assert tool["name"] in model, where  # what to call again, or what to ask first
            if locale != "en-US":
                # The person's text in their language; the model's stays English.
                english = _post(mcp_url, version, "tools/call", {
                    "name": tool["name"], "arguments": arguments})["content"]
                assert person != english[0]["text"], where
                assert model == english[1]["text"], where
                # Not one English sentence's words within it either (a value said in English
                # inside a translated sentence).
                assert [part for part in ENGLISH if part in person] == [], where
                # Nor the tool's English title (tools/list's), which a failure names: a title
                # never put in a catalogue is not one of the parts above.
                assert tool["title"] not in person, where
                if locale == "zh-CN":
                    assert any("\u4e00" <= ch <= "\u9fff" for ch in person), where
    assert cases >= 30, cases  # every demo's tools: a walk that found none would prove nothing
