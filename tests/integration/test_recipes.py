"""Saved recipes against the migrated database (SQLite or PostgreSQL), and the tools over real HTTP."""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult
from sqlalchemy import text

from app.auth.scopes import ScopeCatalog
from app.features.recipes import FEATURE
from app.features.recipes import service as recipes
from app.features.recipes.repository import SavedRecipeRepository
from app.main import create_app
from app.settings import load_settings
from tests.challenges import CHATGPT_META, assert_http_challenge, plain_call
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

pytestmark = pytest.mark.demo("recipes")

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _account() -> str:
    """A fresh account per test: the session database is shared."""
    return f"acct-{uuid.uuid4().hex}"


def _rows(db, account: str) -> int:
    """Counted in SQL, not through the repository under test."""
    query = text("SELECT count(*) FROM saved_recipes WHERE account = :a")
    return db.read_sync(lambda uow: uow.repository(SavedRecipeRepository).session.scalar(query, {"a": account}))


def _titles(db, account: str) -> list[str]:
    return [r.title for r in db.read_sync(lambda uow: recipes.saved(uow, account)).recipes]


def test_two_accounts_never_see_or_touch_each_others_recipes(db):
    alice, bob = _account(), _account()
    soup = db.write_sync(lambda uow: recipes.save(uow, alice, "Lentil soup", "https://example.com/soup"))
    db.write_sync(lambda uow: recipes.save(uow, bob, "Pancakes"))
    assert _titles(db, alice) == ["Lentil soup"]
    assert _titles(db, bob) == ["Pancakes"]
    # The same title is a separate recipe per account; bob deleting alice's id removes nothing of hers.
    bobs_soup = db.write_sync(lambda uow: recipes.save(uow, bob, "lentil soup"))
    assert bobs_soup.created is True and bobs_soup.recipe.id == soup.recipe.id
    db.write_sync(lambda uow: recipes.delete(uow, bob, soup.recipe.id))
    assert _titles(db, alice) == ["Lentil soup"] and _titles(db, bob) == ["Pancakes"]


def test_the_list_is_newest_first(db):
    alice = _account()
    for i, title in enumerate(["First", "Second", "Third"]):
        db.write_sync(lambda uow, t=title, i=i: recipes.save(uow, alice, t, now=T0 + timedelta(minutes=i)))
    assert _titles(db, alice) == ["Third", "Second", "First"]


def test_saving_twice_keeps_one_row_and_updates_only_the_link(db):
    alice = _account()
    first = db.write_sync(lambda uow: recipes.save(uow, alice, "Lentil soup", "https://example.com/a"))
    again = db.write_sync(lambda uow: recipes.save(uow, alice, "  LENTIL   soup "))
    relinked = db.write_sync(lambda uow: recipes.save(uow, alice, "lentil soup", "https://example.com/b"))
    assert (first.created, again.created, relinked.created) == (True, False, False)
    assert first.recipe == again.recipe == relinked.recipe
    assert _rows(db, alice) == 1

    def stored(uow):
        row = uow.repository(SavedRecipeRepository).get(alice, first.recipe.id)
        return row.title, row.source_url

    assert db.read_sync(stored) == ("Lentil soup", "https://example.com/b")


def test_insert_if_absent_is_atomic_on_this_backend(db):
    alice = _account()

    def insert(uow):
        return uow.repository(SavedRecipeRepository).insert_if_absent(alice, "rcp_x", "X", None, T0)

    assert db.write_sync(insert) is True
    assert db.write_sync(insert) is False  # ON CONFLICT DO NOTHING, no IntegrityError
    assert _rows(db, alice) == 1


def test_delete_removes_the_recipe_and_an_unknown_id_is_not_an_error(db):
    alice = _account()
    rid = db.write_sync(lambda uow: recipes.save(uow, alice, "Soup")).recipe.id
    assert db.write_sync(lambda uow: recipes.delete(uow, alice, rid)).deleted is True
    assert db.write_sync(lambda uow: recipes.delete(uow, alice, rid)).deleted is False
    assert db.write_sync(lambda uow: recipes.delete(uow, alice, "rcp_0000000000000000")).deleted is False
    assert _rows(db, alice) == 0


def test_an_account_keeps_at_most_200_recipes(db):
    alice = _account()

    def fill(uow):
        for i in range(recipes.MAX_SAVED):
            recipes.save(uow, alice, f"Recipe {i}")

    db.write_sync(fill)
    with pytest.raises(recipes.RecipeLimitReached):
        db.write_sync(lambda uow: recipes.save(uow, alice, "One too many"))
    assert db.write_sync(lambda uow: recipes.save(uow, alice, "recipe 3")).created is False
    assert _rows(db, alice) == 200


def test_ten_concurrent_saves_of_the_same_title_give_one_row_and_no_error(db):
    alice = _account()
    start = threading.Barrier(10)
    results, errors = [], []

    def save(n: int) -> None:
        start.wait()
        try:
            results.append(db.write_sync(lambda uow: recipes.save(uow, alice, "Lentil soup" if n % 2 else
                                                                   "LENTIL SOUP", f"https://example.com/{n}")))
        except Exception as exc:  # collected, asserted below (an IntegrityError would land here)
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(r.created for r in results) == [False] * 9 + [True]
    assert len({r.recipe.id for r in results}) == 1
    assert _rows(db, alice) == 1


# --- The tools, over real HTTP, with a static token table as the verifier ------------------------------------

ALICE, BOB, CAROL = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("alice", "bob", "carol"))
# What the real verifier (app.auth.tokens) hands over for a "recipes.write" grant: that scope and what it implies.
WRITER_SCOPES = ScopeCatalog(FEATURE.scopes).expand(["recipes.write"])


@pytest.fixture(scope="module")
def recipes_server(database_url: str) -> Iterator[str]:
    def build(base_url: str):
        mcp_url = f"{base_url}/mcp"

        def token(name: str, subject: str, scopes: list[str]) -> AccessToken:
            return AccessToken(token=name, client_id="chatgpt", scopes=scopes, subject=subject, resource=mcp_url)

        verifier = StaticTokenVerifier({
            "alice": token("alice", ALICE, WRITER_SCOPES),
            "bob": token("bob", BOB, WRITER_SCOPES),
            "reader": token("reader", CAROL, ["recipes.read"]),
        })
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json", _env_file=None)
        return create_app(settings, token_verifier=verifier)

    with serving(build) as base_url:
        yield f"{base_url}/mcp"


def _client(url: str, mode: str, token: str | None = None) -> Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=30)), mode=mode)


def _challenge(result: CallToolResult) -> dict[str, str]:
    assert result.is_error is True and result.structured_content is None
    [value] = (result.meta or {})["mcp/www_authenticate"]
    assert value.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', value))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_tools_act_on_the_tokens_account_and_enforce_their_scopes(recipes_server: str, mode: str):
    title = f"Soup {mode}"
    async with _client(recipes_server, mode, "alice") as client:
        saved = await client.call_tool("save_recipe", {"title": f"  {title} ", "source_url": "https://example.com/s"})
        again = await client.call_tool("save_recipe", {"title": title.upper()})
        listed = await client.call_tool("list_saved_recipes", {})
    assert saved.is_error is not True, saved.content
    recipe = {"id": recipes.recipe_id(title), "title": title}
    assert saved.structured_content == {"recipe": recipe, "created": True}
    assert again.structured_content == {"recipe": recipe, "created": False}
    assert "already saved" in again.content[0].text
    assert recipe in listed.structured_content["recipes"]
    assert title in listed.content[0].text

    async with _client(recipes_server, mode, "bob") as client:
        bobs = await client.call_tool("list_saved_recipes", {})
        deleted = await client.call_tool("delete_saved_recipe", {"recipe_id": recipe["id"]})
    assert bobs.structured_content == {"recipes": []}
    assert bobs.content[0].text == "You have no saved recipes yet."
    assert deleted.structured_content == {"deleted": False, "recipe_id": recipe["id"]}  # alice's stays

    async with _client(recipes_server, mode, "reader") as client:
        refused = await client.call_tool("save_recipe", {"title": "Not allowed"}, meta=CHATGPT_META)
        readable = await client.call_tool("list_saved_recipes", {})
    challenge = _challenge(refused)
    assert (challenge["scope"], challenge["error"]) == ("recipes.write", "insufficient_scope")
    assert readable.is_error is not True and readable.structured_content == {"recipes": []}
    base = recipes_server.removesuffix("/mcp")
    assert_http_challenge(plain_call(recipes_server, "save_recipe", {"title": "Not allowed"}, token="reader"), base,
                          "recipes.write", signed_in=True)

    async with _client(recipes_server, mode) as client:
        anonymous = await client.call_tool("list_saved_recipes", {}, meta=CHATGPT_META)
    challenge = _challenge(anonymous)
    assert challenge["scope"] == "recipes.read"
    assert challenge["error_description"] == "Sign in to use List saved recipes."
    assert_http_challenge(plain_call(recipes_server, "list_saved_recipes"), base, "recipes.read", signed_in=False)

    async with _client(recipes_server, mode, "alice") as client:
        removed = await client.call_tool("delete_saved_recipe", {"recipe_id": recipe["id"]})
        after = await client.call_tool("list_saved_recipes", {})
    assert removed.structured_content == {"deleted": True, "recipe_id": recipe["id"]}
    assert recipe not in after.structured_content["recipes"]
