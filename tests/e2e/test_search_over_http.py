"""The search demo over real HTTP: what a linked account's token adds to what anyone may search."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken

from app.features.search.repository import SearchRepository
from app.main import create_app, discover_features
from app.settings import load_settings
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

pytestmark = [pytest.mark.anyio, pytest.mark.demo("search")]
MODES = ["legacy", "auto"]
PRIVATE_WORD = "zyxwvuprivateword"


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[str]:
    def build(base_url: str):
        mcp_url = f"{base_url}/mcp"
        verifier = StaticTokenVerifier({
            "right": AccessToken(token="right", client_id="chatgpt", scopes=["search.read"], subject="alice",
                                 resource=mcp_url),
            "other-scope": AccessToken(token="other-scope", client_id="chatgpt", scopes=["recipes.read"],
                                       subject="alice", resource=mcp_url),
        })
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json", _env_file=None)
        return create_app(settings, token_verifier=verifier, features=discover_features())

    with serving(build) as base_url:
        yield f"{base_url}/mcp"


def _client(url: str, mode: str, token: str | None = None) -> Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30)), mode=mode)


@pytest.mark.parametrize("mode", MODES)
async def test_search_shows_private_documents_only_to_their_owner_with_search_read(server: str, db, mode: str):
    doc = {"id": "private:alice:1", "title": "Alice's notes", "url": "https://example.com/alice",
           "module": "private", "kind": "note", "body": f"Notes about {PRIVATE_WORD}.", "owner": "alice"}
    db.write_sync(lambda uow: uow.repository(SearchRepository).save_all([doc]))
    try:
        seen = {}
        for token in (None, "other-scope", "right"):
            async with _client(server, mode, token) as client:
                result = await client.call_tool("search", {"q": PRIVATE_WORD})
            seen[token] = [h["id"] for h in result.structured_content["results"]]
    finally:
        db.write_sync(lambda uow: uow.repository(SearchRepository).remove([doc["id"]]))
    assert seen == {None: [], "other-scope": [], "right": ["private:alice:1"]}
