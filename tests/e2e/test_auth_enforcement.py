"""Per-tool securitySchemes, enforced, over real HTTP on both protocol paths.

The server is the one ``create_app`` builds, with test-only features only (so these tests survive
any fork): a tool that needs two OAuth scopes, and an anonymous tool that shows more to a token with
a scope; a static token table is the verifier (what is under test here is what the server does with
the verifier's answer, not how a token is checked).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Annotated

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult
from pydantic import BaseModel

from app.auth.resource_server import current_subject
from app.auth.schemes import NOAUTH, oauth2
from app.auth.scopes import Scope
from app.feature import Deps, Feature
from app.main import create_app
from app.mcp.registry import ToolRegistry
from app.mcp.results import tool_result
from app.settings import load_settings
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
# What ChatGPT's requests carry (it starts linking from the tool result; other clients from HTTP 401/403).
CHATGPT_META = {"openai/locale": "en-US"}
VAULT_SCOPES = ("vault.read", "vault.list")
NOTES_SCOPE = "notes.read"


class VaultView(BaseModel):
    subject: str
    scopes: list[str]


def _vault(registry: ToolRegistry, deps: Deps) -> None:
    @registry.tool(name="read_vault", title="Read the vault", description="Test-only tool that needs an account",
                   read_only=True, destructive=False, open_world=False, security=[oauth2(*VAULT_SCOPES)])
    async def read_vault() -> Annotated[CallToolResult, VaultView]:
        token = get_access_token()
        assert token is not None and token.subject  # enforcement ran before the body
        return tool_result(VaultView(subject=token.subject, scopes=sorted(token.scopes)), "vault opened")


class Notice(BaseModel):
    public: str
    private: list[str]


def _notices(registry: ToolRegistry, deps: Deps) -> None:
    @registry.tool(name="read_notice", title="Read the notice board", description="Test-only tool: anyone reads the "
                   "public notice, an account with notes.read its own notes too", read_only=True, destructive=False,
                   open_world=False, security=[NOAUTH, oauth2(NOTES_SCOPE)])
    async def read_notice() -> Annotated[CallToolResult, Notice]:
        subject = current_subject(NOTES_SCOPE)
        return tool_result(Notice(public="open daily", private=[f"note of {subject}"] if subject else []), "notice")


VAULT = Feature(name="vault", tools=_vault, scopes=tuple(Scope(s, {"en": s}) for s in VAULT_SCOPES))
NOTICES = Feature(name="notices", tools=_notices, scopes=(Scope(NOTES_SCOPE, {"en": "Read your notes"}),))


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[str]:
    def build(base_url: str):
        mcp_url = f"{base_url}/mcp"
        full = [*VAULT_SCOPES, NOTES_SCOPE]
        verifier = StaticTokenVerifier({
            "right": AccessToken(token="right", client_id="chatgpt", scopes=full, subject="alice", resource=mcp_url),
            "partial": AccessToken(token="partial", client_id="chatgpt", scopes=["vault.read"], subject="alice",
                                   resource=mcp_url),
            "vault-only": AccessToken(token="vault-only", client_id="chatgpt", scopes=list(VAULT_SCOPES),
                                      subject="alice", resource=mcp_url),
            "other-audience": AccessToken(token="other-audience", client_id="chatgpt", scopes=full, subject="alice",
                                          resource="https://elsewhere.example/mcp"),
            "expired": AccessToken(token="expired", client_id="chatgpt", scopes=full, subject="alice",
                                   resource=mcp_url, expires_at=int(time.time()) - 60),
        })
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json", _env_file=None)
        return create_app(settings, token_verifier=verifier, features=[VAULT, NOTICES])

    with serving(build) as base_url:
        yield f"{base_url}/mcp"


def _client(url: str, mode: str, token: str | None = None) -> Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30)), mode=mode)


def _challenge(result: CallToolResult) -> dict[str, str]:
    challenges = (result.meta or {})["mcp/www_authenticate"]
    assert isinstance(challenges, list) and len(challenges) == 1
    value = challenges[0]
    assert value.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', value))


@pytest.mark.parametrize("mode", MODES)
async def test_anonymous_callers_list_tools_and_use_noauth_tools(server: str, mode: str):
    async with _client(server, mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        notice = await client.call_tool("read_notice", {})
    assert {"read_vault", "read_notice"} <= names
    assert notice.is_error is not True and notice.structured_content == {"public": "open daily", "private": []}


@pytest.mark.parametrize("mode", MODES)
async def test_chatgpts_anonymous_call_to_an_oauth_tool_gets_a_linking_challenge_in_the_result(server: str, mode: str):
    async with _client(server, mode) as client:
        result = await client.call_tool("read_vault", {}, meta=CHATGPT_META)
    assert result.is_error is True and result.structured_content is None
    assert "sign in" in result.content[0].text
    assert _challenge(result) == {
        "resource_metadata": server.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp",
        "scope": "vault.read vault.list",
        "error": "insufficient_scope",
        "error_description": "Sign in to use Read the vault.",
    }


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_another_clients_anonymous_call_to_an_oauth_tool_gets_http_401_without_an_error_code(server: str,
                                                                                           version: str):
    response = _post(server, None, version)
    assert response.status_code == 401
    # RFC 6750 §3.1: a request that sent no token is told where to get one, not given an error code.
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{server.removesuffix("/mcp")}/.well-known/oauth-protected-resource/mcp", '
        'scope="vault.read vault.list"')


@pytest.mark.parametrize("mode", MODES)
async def test_chatgpts_token_missing_one_scope_gets_a_challenge_for_every_scope_the_tool_needs(server: str,
                                                                                             mode: str):
    async with _client(server, mode, "partial") as client:
        result = await client.call_tool("read_vault", {}, meta=CHATGPT_META)
    assert result.is_error is True and result.structured_content is None
    challenge = _challenge(result)
    assert challenge["scope"] == "vault.read vault.list"
    assert challenge["error"] == "insufficient_scope"
    assert challenge["error_description"] == "Read the vault needs more access to the linked account " \
                                             "(vault.read vault.list)."


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_another_clients_token_missing_a_scope_gets_http_403_insufficient_scope(server: str, version: str):
    response = _post(server, "partial", version)
    assert response.status_code == 403
    params = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', response.headers["www-authenticate"]))
    assert params == {
        "resource_metadata": server.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp",
        "scope": "vault.read vault.list", "error": "insufficient_scope",
        "error_description": "Read the vault needs more access to the linked account (vault.read vault.list)."}


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_with_every_scope_runs_the_tool_as_its_subject(server: str, mode: str):
    async with _client(server, mode, "right") as client:
        result = await client.call_tool("read_vault", {})
    assert result.is_error is not True
    assert result.structured_content == {"subject": "alice", "scopes": ["notes.read", "vault.list", "vault.read"]}
    assert "mcp/www_authenticate" not in (result.meta or {})


def _post(url: str, token: str | None, version: str) -> httpx.Response:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": version, **({"authorization": f"Bearer {token}"} if token else {})}
    params: dict = {"name": "read_vault", "arguments": {}}
    if version == "2026-07-28":
        headers |= {"mcp-method": "tools/call", "mcp-name": "read_vault"}
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version,
                           "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                           "io.modelcontextprotocol/clientCapabilities": {}}
    return httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params},
                      headers=headers, timeout=10)


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
@pytest.mark.parametrize("token", ["not-a-known-token", "expired", "other-audience"])
def test_a_token_the_verifier_rejects_gets_http_401_invalid_token(server: str, version: str, token: str):
    resp = _post(server, token, version)
    assert resp.status_code == 401
    assert resp.json()["error"] == "invalid_token"
    header = resp.headers["www-authenticate"]
    params = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', header))
    assert header.startswith("Bearer ")
    assert params["error"] == "invalid_token" and params["error_description"]
    assert params["resource_metadata"] == server.removesuffix("/mcp") + "/.well-known/oauth-protected-resource/mcp"


@pytest.mark.parametrize("mode", MODES)
async def test_an_anonymous_tool_shows_more_only_to_a_token_with_its_scope(server: str, mode: str):
    seen = {}
    for token in (None, "vault-only", "right"):
        async with _client(server, mode, token) as client:
            result = await client.call_tool("read_notice", {})
        assert result.is_error is not True and "mcp/www_authenticate" not in (result.meta or {})
        seen[token] = result.structured_content["private"]
    assert seen == {None: [], "vault-only": [], "right": ["note of alice"]}
