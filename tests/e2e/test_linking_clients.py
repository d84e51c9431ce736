"""Linking as other clients do it, and what a linked account can reach.

- the mcp SDK's own ``OAuthClientProvider``, from nothing but the 401 of a protected tool (discovery, DCR, PKCE,
  RFC 9207 check, refresh), and its step-up through a 403 ``insufficient_scope``;
- every oauth tool refuses an anonymous call with the linking challenge (HTTP 401 for a client that is not
  ChatGPT, the isError result for ChatGPT); every noauth tool
  answers anonymously (read from tools/list, so a new tool is covered without editing this);
- alice and bob linked at the same time never see each other's data.
"""

from __future__ import annotations

import re

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from tests.challenges import CHATGPT_META, assert_http_challenge, plain_call
from tests.demos import DEMOS
from tests.e2e.conftest import Linking
from tests.e2e.oauth_client import (
    CHATGPT_REDIRECT,
    Browser,
    Pkce,
    authorize_params,
    call_tool,
    code_grant,
    query_of,
    token,
)

pytestmark = [pytest.mark.demo(*DEMOS), pytest.mark.authserver]

PASSWORD = "demo-password"
# Arguments for the tools that need some; the rest are called with none.
ARGUMENTS = {"search": {"q": "pathlib"}, "get_zoo_animal_details": {"animal_id": "king-penguin-admiral"},
             "like_zoo_animal": {"animal_id": "king-penguin-admiral"}, "save_recipe": {"title": "Tea"},
             "delete_saved_recipe": {"recipe_id": "rcp_0000"}, "delete_file": {"file_id": "file_0000"},
             "log_widget_event": {"event": "widget.mount"},
             "update_settings": {"set": {"zoo_count": 10}},
             "open_file": {"file": {"name": "a.csv", "resourceUri": "file:///host/1"}}}


class MemoryStorage(TokenStorage):
    def __init__(self, tokens: OAuthToken | None = None) -> None:
        self.tokens = tokens
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def _sdk_provider(linking: Linking, storage: MemoryStorage, scope: str, username: str,
                  locations: list[str]) -> OAuthClientProvider:
    async def redirect_handler(authorization_url: str) -> None:
        # The user's browser: the login and consent pages, then the redirect back to the client.
        params = query_of(authorization_url)
        assert authorization_url.startswith(f"{linking.base_url}/authorize?")
        location = await anyio.to_thread.run_sync(Browser(linking.base_url).sign_in, params, username, PASSWORD)
        locations.append(location)

    async def callback_handler() -> AuthorizationCodeResult:
        callback = query_of(locations[-1])
        return AuthorizationCodeResult(code=callback["code"], state=callback.get("state"), iss=callback.get("iss"))

    return OAuthClientProvider(
        server_url=linking.resource,
        client_metadata=OAuthClientMetadata(redirect_uris=[CHATGPT_REDIRECT], client_name="mcp SDK client",
                                            grant_types=["authorization_code", "refresh_token"],
                                            token_endpoint_auth_method="none", scope=scope),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler)


@pytest.mark.anyio
async def test_the_mcp_sdk_oauth_client_links_from_the_401_of_a_protected_tool(linking: Linking):
    # No token prepared: the 401 of the first protected call is what starts the SDK's flow (discovery from its
    # resource_metadata, DCR, PKCE, resource).
    locations: list[str] = []
    storage = MemoryStorage()
    http = httpx2.AsyncClient(auth=_sdk_provider(linking, storage, "recipes.write", "bob", locations), timeout=30)
    async with Client(streamable_http_client(linking.resource, http_client=http), mode="legacy") as client:
        saved = await client.call_tool("save_recipe", {"title": "Pão de queijo"})
        listed = await client.call_tool("list_saved_recipes", {})
        profile = await client.call_tool("get_account_profile", {})
    assert len(locations) == 1 and storage.client is not None and storage.client.client_id.startswith("dcr_")
    assert saved.is_error is not True, saved
    assert "Pão de queijo" in [r["title"] for r in listed.structured_content["recipes"]]
    assert profile.structured_content["nickname"] == "bob"
    assert storage.tokens is not None and storage.tokens.refresh_token


@pytest.mark.anyio
async def test_the_mcp_sdk_oauth_client_steps_up_through_the_403_of_a_tool_needing_more(linking: Linking):
    # The SDK asks for what the challenge names (SEP-835), and registers with it: recipes.read first.
    locations: list[str] = []
    storage = MemoryStorage()
    http = httpx2.AsyncClient(auth=_sdk_provider(linking, storage, "recipes.read", "alice", locations), timeout=30)
    async with Client(streamable_http_client(linking.resource, http_client=http), mode="legacy") as client:
        listed = await client.call_tool("list_saved_recipes", {})
        first = storage.tokens.scope.split() if storage.tokens and storage.tokens.scope else []
        saved = await client.call_tool("save_recipe", {"title": "Step-up stew"})  # 403 insufficient_scope first
        again = await client.call_tool("list_saved_recipes", {})  # what was granted first is still granted
    assert listed.is_error is not True and saved.is_error is not True, saved
    assert "Step-up stew" in [r["title"] for r in again.structured_content["recipes"]]
    assert len(locations) == 2 and first == ["recipes.read"]
    assert "recipes.write" in storage.tokens.scope.split()


def test_every_oauth_tool_challenges_an_anonymous_caller_and_every_noauth_tool_answers(linking: Linking):
    tools = httpx.post(linking.resource, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"accept": "application/json, text/event-stream",
                                "mcp-protocol-version": "2025-06-18"}).json()["result"]["tools"]
    oauth_only = [t for t in tools if all(s["type"] == "oauth2" for s in t["_meta"]["securitySchemes"])]
    anonymous_ok = [t for t in tools if any(s["type"] == "noauth" for s in t["_meta"]["securitySchemes"])]
    assert {t["name"] for t in oauth_only} >= {"list_saved_recipes", "save_recipe", "delete_saved_recipe",
                                               "get_account_profile"}
    assert {t["name"] for t in anonymous_ok} >= {"search", "get_zoo_animals", "recommend_cafe", "analyze_file"}
    for tool in oauth_only:
        wanted = tool["_meta"]["securitySchemes"][0]["scopes"]
        # Another client: HTTP 401, the same metadata and scope.
        assert_http_challenge(plain_call(linking.resource, tool["name"], ARGUMENTS.get(tool["name"], {})),
                              linking.base_url, " ".join(wanted), signed_in=False)
        # ChatGPT: the isError result with the challenge in its _meta.
        result = call_tool(linking.resource, tool["name"], ARGUMENTS.get(tool["name"], {}),
                           meta=CHATGPT_META).json()["result"]
        assert result["isError"] is True, tool["name"]
        (challenge,) = result["_meta"]["mcp/www_authenticate"]
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        assert params["resource_metadata"] == f"{linking.base_url}/.well-known/oauth-protected-resource/mcp"
        assert params["error"] == "insufficient_scope" and params["error_description"], tool["name"]
        assert params.get("scope", "").split() == wanted, tool["name"]
        assert "structuredContent" not in result  # never a placeholder answer
    # The files the file tools analyse anonymously: the client document the test's "chatgpt.com" serves.
    document = {"download_url": linking.site.client_id, "file_id": "file_e2e", "file_name": "client.json"}
    files = {"analyze_file": {"file": document}, "compare_files": {"files": [document, document]}}
    for tool in anonymous_ok:
        result = call_tool(linking.resource, tool["name"], files.get(tool["name"]) or ARGUMENTS.get(tool["name"], {}))
        result = result.json()["result"]
        assert result["isError"] is False, (tool["name"], result)


def _link(linking: Linking, username: str, scope: str) -> str:
    client = httpx.post(f"{linking.base_url}/register", json={
        "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none"}).json()["client_id"]
    pkce = Pkce.new()
    code = query_of(Browser(linking.base_url).sign_in(authorize_params(client, pkce, linking.resource, scope=scope),
                                                      username, PASSWORD))["code"]
    response = token(linking.base_url, code_grant(code, pkce, linking.resource, client_id=client))
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


def _result(linking: Linking, name: str, access: str | None, arguments: dict | None = None) -> dict:
    return call_tool(linking.resource, name, arguments, token=access).json()["result"]


def test_two_accounts_linked_at_once_never_see_each_others_data(linking: Linking):
    alice = _link(linking, "alice", "recipes.write search.read")
    bob = _link(linking, "bob", "recipes.write search.read")
    _result(linking, "save_recipe", alice, {"title": "Alice's secret stew"})
    _result(linking, "save_recipe", bob, {"title": "Bob's secret soup"})

    alice_recipes = [r["title"] for r in _result(linking, "list_saved_recipes", alice)["structuredContent"]["recipes"]]
    bob_recipes = [r["title"] for r in _result(linking, "list_saved_recipes", bob)["structuredContent"]["recipes"]]
    assert "Alice's secret stew" in alice_recipes and "Bob's secret soup" not in alice_recipes
    assert "Bob's secret soup" in bob_recipes and "Alice's secret stew" not in bob_recipes

    # Bob cannot delete Alice's recipe by its id.
    stew = next(r for r in _result(linking, "list_saved_recipes", alice)["structuredContent"]["recipes"]
                if r["title"] == "Alice's secret stew")
    assert _result(linking, "delete_saved_recipe", bob, {"recipe_id": stew["id"]})["structuredContent"][
        "deleted"] is False
    assert stew["id"] in [r["id"] for r in _result(linking, "list_saved_recipes", alice)["structuredContent"][
        "recipes"]]

    # search.read adds one's own private notes, never the other's; anonymous gets public pages only.
    def note_urls(access: str | None) -> set[str]:
        hits = _result(linking, "search", access, {"q": "asyncio timeouts notes"})["structuredContent"]["results"]
        return {h["url"] for h in hits if h["url"].startswith("https://notes.example/")}

    assert note_urls(alice) == {"https://notes.example/alice/asyncio-timeouts"}
    assert note_urls(bob) == {"https://notes.example/bob/asyncio-timeouts"}
    assert note_urls(None) == set()

    alice_id = _result(linking, "get_account_profile", alice)["structuredContent"]["id"]
    bob_id = _result(linking, "get_account_profile", bob)["structuredContent"]["id"]
    assert alice_id != bob_id and alice_id.startswith("acct_") and bob_id.startswith("acct_")
    # Reconnecting (a new grant) gives the same id: it belongs to the account, not to the login.
    again = _link(linking, "alice", "recipes.read")
    assert _result(linking, "get_account_profile", again)["structuredContent"]["id"] == alice_id
