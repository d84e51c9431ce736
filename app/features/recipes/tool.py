"""MCP tools of the recipes feature: every call acts on the account of the caller's token, never on input."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import AnyHttpUrl, Field, StringConstraints, UrlConstraints

from app.auth.resource_server import linked_account
from app.auth.schemes import oauth2
from app.feature import Deps
from app.features.recipes import service
from app.features.recipes.schemas import RecipeDeleted, RecipeSaved, SavedRecipes
from app.mcp.registry import ToolRegistry
from app.mcp.results import tool_result
from app.mcp.widgets import Widget

READ_SCOPE = "recipes.read"
WRITE_SCOPE = "recipes.write"

Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=service.MAX_TITLE),
                  Field(description="The recipe's title, e.g. 'Lentil soup with lemon'")]
SourceUrl = Annotated[AnyHttpUrl, UrlConstraints(max_length=service.MAX_URL),
                      Field(description="Optional http(s) link to the recipe")]
RecipeId = Annotated[str, Field(min_length=1, max_length=40, description="Recipe id from list_saved_recipes")]


def saved_result(recipes: SavedRecipes) -> CallToolResult:
    count = len(recipes.recipes)
    if not count:
        return tool_result(recipes, "You have no saved recipes yet.")
    titles = ", ".join(r.title for r in recipes.recipes)
    return tool_result(recipes, f"You have {count} saved {'recipe' if count == 1 else 'recipes'}: {titles}.")


def saved_one_result(result: RecipeSaved, link_given: bool) -> CallToolResult:
    title = result.recipe.title
    if result.created:
        return tool_result(result, f"Saved “{title}” to your recipes.")
    if link_given:
        return tool_result(result, f"“{title}” was already saved; its link is updated.")
    return tool_result(result, f"“{title}” was already saved; nothing changed.")


def deleted_result(result: RecipeDeleted) -> CallToolResult:
    if result.deleted:
        return tool_result(result, f"Removed recipe {result.recipe_id} from your saved recipes.")
    return tool_result(result, f"Recipe {result.recipe_id} was not in your saved recipes; nothing to remove.")


RECIPES_WIDGET = Widget(
    name="recipes",
    title="Saved recipes",
    description="Shows the user's saved recipes, with a form to save one and a delete button per recipe; the list "
    "is already visible, so there is no need to repeat it.",
)


def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db

    @registry.tool(
        name="list_saved_recipes",
        title="List saved recipes",
        description="Returns the user's saved recipes without modifying them.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[oauth2(READ_SCOPE)],
        widget=RECIPES_WIDGET,
        invoking="Opening your recipes…",
        invoked="Recipes ready",
    )
    async def list_saved_recipes() -> Annotated[CallToolResult, SavedRecipes]:
        account = linked_account("Saved recipes")
        return saved_result(await db.read(lambda uow: service.saved(uow, account)))

    @registry.tool(
        name="save_recipe",
        title="Save a recipe",
        description="Save a recipe to the user's list by title, optionally with a link to it. Saving a title "
        "that is already in the list (ignoring case and spacing) keeps one entry and only updates its link.",
        read_only=False,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[oauth2(WRITE_SCOPE)],
        widget=RECIPES_WIDGET,
        invoking="Saving the recipe…",
        invoked="Recipe saved",
    )
    async def save_recipe(title: Title, source_url: SourceUrl | None = None) -> Annotated[CallToolResult, RecipeSaved]:
        account = linked_account("Saved recipes")
        url = str(source_url) if source_url is not None else None
        result = await db.write(lambda uow: service.save(uow, account, title, url,
                                                         accounts=deps.accounts))
        return saved_one_result(result, link_given=url is not None)

    @registry.tool(
        name="delete_saved_recipe",
        title="Delete a saved recipe",
        description="Remove one recipe from the user's saved list, by its id from list_saved_recipes. "
        "Removing a recipe that is not in the list changes nothing.",
        read_only=False,
        destructive=True,
        open_world=False,
        idempotent=True,
        security=[oauth2(WRITE_SCOPE)],
        widget=RECIPES_WIDGET,
        invoking="Removing the recipe…",
        invoked="Recipe removed",
    )
    async def delete_saved_recipe(recipe_id: RecipeId) -> Annotated[CallToolResult, RecipeDeleted]:
        account = linked_account("Saved recipes")
        return deleted_result(await db.write(lambda uow: service.delete(uow, account, recipe_id)))
