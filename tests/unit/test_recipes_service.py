"""Saved-recipe use cases against a fake unit of work (no database), and the text the model reads."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from app.features.recipes import service
from app.features.recipes.repository import SavedRecipeRepository
from app.features.recipes.schemas import RecipeDeleted, RecipeSummary, SavedRecipes
from app.features.recipes.tool import deleted_result, saved_result
from tests.fakes import FakeUnitOfWork

pytestmark = pytest.mark.demo("recipes")

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class _Row:
    account: str
    id: str
    title: str
    source_url: str | None
    saved_at: datetime


class FakeRecipes:
    """In-memory rows keyed by (account, id). ``race`` makes the next insert lose to a concurrent one."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], _Row] = {}
        self.locked: list[str] = []
        self.race: _Row | None = None

    def lock_account(self, account: str) -> None:
        self.locked.append(account)

    def newest_first(self, account: str) -> list[_Row]:
        mine = [r for r in self.rows.values() if r.account == account]
        return sorted(mine, key=lambda r: r.saved_at, reverse=True)

    def get(self, account: str, recipe_id: str) -> _Row | None:
        return self.rows.get((account, recipe_id))

    def count(self, account: str) -> int:
        return sum(1 for r in self.rows.values() if r.account == account)

    def insert_if_absent(self, account, recipe_id, title, source_url, saved_at) -> bool:
        if self.race is not None:  # another transaction inserted the same key first
            self.rows[(self.race.account, self.race.id)], self.race = self.race, None
        if (account, recipe_id) in self.rows:
            return False
        self.rows[(account, recipe_id)] = _Row(account, recipe_id, title, source_url, saved_at)
        return True

    def set_source_url(self, account: str, recipe_id: str, source_url: str) -> None:
        self.rows[(account, recipe_id)].source_url = source_url

    def delete(self, account: str, recipe_id: str) -> bool:
        return self.rows.pop((account, recipe_id), None) is not None


def _save(recipes: FakeRecipes, title: str, url: str | None = None, account: str = "alice", now: datetime = T0):
    with FakeUnitOfWork({SavedRecipeRepository: recipes}) as uow:
        result = service.save(uow, account, title, url, now=now)
    assert uow.committed is False  # services never commit
    return result


def test_the_id_is_rcp_plus_16_hex_of_the_sha256_of_the_casefolded_whitespace_collapsed_title():
    expected = "rcp_" + hashlib.sha256(b"lentil soup").hexdigest()[:16]
    assert service.recipe_id("Lentil soup") == expected
    assert service.recipe_id("  LENTIL \n\t  Soup ") == expected
    assert service.recipe_id("Straße") == service.recipe_id("STRASSE")  # casefold, not lower
    assert service.recipe_id("Lentil soups") != expected
    assert len(expected) == 20 <= 40


def test_titles_are_stored_with_whitespace_collapsed_and_must_have_a_visible_character():
    assert service.clean_title("  Lentil \n soup ") == "Lentil soup"
    for bad in ("", "   ", "\n\t", "\u3000"):
        with pytest.raises(service.InvalidRecipe):
            service.clean_title(bad)
    with pytest.raises(service.InvalidRecipe):
        service.clean_title("x" * 201)
    assert service.clean_title("x" * 200) == "x" * 200


def test_a_first_save_creates_the_recipe_under_the_account_lock():
    recipes = FakeRecipes()
    result = _save(recipes, " Lentil  soup ", "https://example.com/soup")
    assert result.created is True
    assert result.recipe == RecipeSummary(id=service.recipe_id("lentil soup"), title="Lentil soup")
    assert recipes.locked == ["alice"]
    row = recipes.rows[("alice", result.recipe.id)]
    assert (row.title, row.source_url, row.saved_at) == ("Lentil soup", "https://example.com/soup", T0)


def test_saving_the_same_title_again_keeps_one_recipe_and_updates_only_a_given_link():
    recipes = FakeRecipes()
    first = _save(recipes, "Lentil soup", "https://example.com/a")
    again = _save(recipes, "LENTIL   SOUP", now=datetime(2026, 2, 1, tzinfo=UTC))
    assert again.created is False and again.recipe == first.recipe  # the first spelling is kept
    assert recipes.rows[("alice", first.recipe.id)].source_url == "https://example.com/a"  # no link: unchanged
    relinked = _save(recipes, "lentil soup", "https://example.com/b")
    assert relinked.created is False and len(recipes.rows) == 1
    row = recipes.rows[("alice", first.recipe.id)]
    assert (row.source_url, row.saved_at) == ("https://example.com/b", T0)


def test_a_save_that_loses_an_insert_race_reports_the_winners_recipe_as_already_saved():
    recipes = FakeRecipes()
    rid = service.recipe_id("Lentil soup")
    recipes.race = _Row("alice", rid, "Lentil Soup", None, T0)
    result = _save(recipes, "lentil soup", "https://example.com/x")
    assert result.created is False and result.recipe.title == "Lentil Soup"
    assert recipes.rows[("alice", rid)].source_url == "https://example.com/x"


def test_the_201st_recipe_is_refused_but_re_saving_a_saved_one_at_the_limit_is_fine():
    recipes = FakeRecipes()
    for i in range(service.MAX_SAVED):
        assert _save(recipes, f"Recipe {i}").created is True
    with pytest.raises(service.RecipeLimitReached):
        _save(recipes, "One too many")
    assert recipes.count("alice") == 200
    assert _save(recipes, "recipe 7", "https://example.com/7").created is False
    assert _save(recipes, "Someone else's first", account="bob").created is True  # the limit is per account


def test_a_too_long_link_is_refused_before_the_database_sees_it():
    with pytest.raises(service.InvalidRecipe):
        _save(FakeRecipes(), "Soup", "https://example.com/" + "x" * 2048)


def test_the_list_is_the_accounts_own_newest_first():
    recipes = FakeRecipes()
    _save(recipes, "Old", now=T0)
    _save(recipes, "New", now=datetime(2026, 3, 1, tzinfo=UTC))
    _save(recipes, "Bob's", account="bob")
    with FakeUnitOfWork({SavedRecipeRepository: recipes}) as uow:
        listed = service.saved(uow, "alice")
    assert [r.title for r in listed.recipes] == ["New", "Old"]


def test_deleting_an_unknown_id_is_not_an_error_and_deleting_twice_is_idempotent():
    recipes = FakeRecipes()
    rid = _save(recipes, "Soup").recipe.id
    with FakeUnitOfWork({SavedRecipeRepository: recipes}) as uow:
        assert service.delete(uow, "bob", rid) == RecipeDeleted(deleted=False, recipe_id=rid)  # not bob's
        assert service.delete(uow, "alice", "rcp_unknown") == RecipeDeleted(deleted=False, recipe_id="rcp_unknown")
        assert service.delete(uow, "alice", rid) == RecipeDeleted(deleted=True, recipe_id=rid)
        assert service.delete(uow, "alice", rid).deleted is False
    assert recipes.rows == {} and uow.committed is False


def test_an_empty_account_is_refused():
    with FakeUnitOfWork({SavedRecipeRepository: FakeRecipes()}) as uow, pytest.raises(service.InvalidRecipe):
        service.saved(uow, "")


def test_the_texts_the_model_reads():
    one = SavedRecipes(recipes=[RecipeSummary(id="rcp_a", title="A")])
    two = SavedRecipes(recipes=[*one.recipes, RecipeSummary(id="rcp_b", title="B")])
    assert saved_result(two).content[0].text == "You have 2 saved recipes: A, B."
    assert saved_result(one).content[0].text == "You have 1 saved recipe: A."
    assert saved_result(SavedRecipes(recipes=[])).content[0].text == "You have no saved recipes yet."
    gone = deleted_result(RecipeDeleted(deleted=False, recipe_id="rcp_x")).content[0].text
    assert "was not in your saved recipes" in gone
