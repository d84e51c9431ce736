"""Saved-recipe use cases, for one account. Functions of a unit of work; they never commit."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from app.db import UnitOfWork
from app.feature import LocalAccounts, require_account
from app.features.recipes.repository import SavedRecipeRepository
from app.features.recipes.schemas import (
    RecipeDeleted,
    RecipeDetail,
    RecipeSaved,
    RecipeSummary,
    SavedRecipes,
)
from app.mcp.errors import ToolFailure
from app.wording import Wording

say = Wording(__file__)
MAX_SAVED = 200
MAX_TITLE = 200
MAX_URL = 2048
MAX_ACCOUNT = 255


class InvalidRecipe(ToolFailure):
    """What the schema could not refuse (a title blank once whitespace is collapsed, an unusable account id)."""


class RecipeLimitReached(ToolFailure):
    advice = "Ask the user which saved recipe to delete (delete_saved_recipe) before saving another."

    def __init__(self, limit: int = MAX_SAVED) -> None:
        super().__init__(say("The list already holds {limit} recipes, the most it can keep.",
                             limit=limit))
        self.limit = limit


def clean_title(title: str) -> str:
    """The title as stored: runs of whitespace (newlines included) collapsed to one space, ends stripped."""
    cleaned = " ".join(title.split())
    if not cleaned:
        raise InvalidRecipe(say("A recipe title needs at least one visible character."),
                            "Ask the user for the recipe's title.")
    if len(cleaned) > MAX_TITLE:
        raise InvalidRecipe(say("A recipe title is at most {count} characters.", count=MAX_TITLE),
                            "Save it again under a shorter title; ask the user if unsure which.")
    return cleaned


def recipe_id(title: str) -> str:
    """The same for every spelling of a title that differs only in case or whitespace."""
    normalised = " ".join(title.split()).casefold()
    return "rcp_" + hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:16]


def _check_account(account: str) -> None:
    if not account or len(account) > MAX_ACCOUNT:
        # An identity provider's subject beyond the column's width: no retry or input can fix it.
        raise InvalidRecipe(say("The linked account has no usable id."),
                            "Tell the user this account cannot keep saved recipes; do not retry.")


def saved(uow: UnitOfWork, account: str) -> SavedRecipes:
    return saved_with_links(uow, account)[0]


def saved_with_links(uow: UnitOfWork, account: str) -> tuple[SavedRecipes, dict[str, str]]:
    """The account's recipes (the reference page's ``{id, title}`` shape) and, apart, the link
    each was saved with, by id (for the widget only: ``_meta``)."""
    _check_account(account)
    rows = uow.repository(SavedRecipeRepository).newest_first(account)
    return (SavedRecipes(recipes=[RecipeSummary(id=r.id, title=r.title) for r in rows]),
            {r.id: r.source_url for r in rows if r.source_url})


def save(uow: UnitOfWork, account: str, title: str, source_url: str | None = None, *,
         now: datetime | None = None, accounts: LocalAccounts | None = None) -> RecipeSaved:
    """Save once per normalised title. Saving again keeps the first title and changes only the
    link (if given). ``accounts``: the built-in authorization server's, whose deleted accounts
    keep nothing."""
    _check_account(account)
    title = clean_title(title)
    if source_url is not None and len(source_url) > MAX_URL:
        raise InvalidRecipe(say("A recipe link is at most {count} characters.", count=MAX_URL),
                            "Save it again without source_url, or with a shorter link to the same recipe.")
    rid = recipe_id(title)
    recipes = uow.repository(SavedRecipeRepository)
    recipes.lock_account(account)
    existing = recipes.get(account, rid)
    if existing is None:
        # Only a new row needs the account held: a row already there means the account's data
        # was not deleted (deleting the account deletes its rows), so a save of it again, the
        # common case, costs no extra statement.
        require_account(accounts, uow, account)
        if recipes.count(account) >= MAX_SAVED:
            raise RecipeLimitReached(MAX_SAVED)
        if recipes.insert_if_absent(account, rid, title, source_url, now or datetime.now(UTC)):
            return RecipeSaved(recipe=RecipeSummary(id=rid, title=title), created=True)
        existing = recipes.get(account, rid)  # a concurrent save of the same title got there first
    if source_url is not None:
        recipes.set_source_url(account, rid, source_url)
    return RecipeSaved(recipe=RecipeSummary(id=rid, title=existing.title if existing else title), created=False)


def one(uow: UnitOfWork, account: str, recipe_id: str) -> RecipeDetail | None:
    """The account's recipe of that id; None when it has none (another account's is none)."""
    _check_account(account)
    row = uow.repository(SavedRecipeRepository).get(account, recipe_id)
    if row is None:
        return None
    saved_at = row.saved_at if row.saved_at.tzinfo else row.saved_at.replace(tzinfo=UTC)
    return RecipeDetail(id=row.id, title=row.title, source_url=row.source_url,
                        saved_at=saved_at.isoformat(timespec="seconds"))


def delete(uow: UnitOfWork, account: str, recipe_id: str) -> RecipeDeleted:
    """Idempotent: deleting a recipe that is not (or no longer) saved reports ``deleted=False``."""
    _check_account(account)
    return RecipeDeleted(deleted=uow.repository(SavedRecipeRepository).delete(account, recipe_id),
                         recipe_id=recipe_id)
