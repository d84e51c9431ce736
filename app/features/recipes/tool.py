"""MCP tools of the recipes feature: every call acts on the account of the caller's token, never on input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    UrlConstraints,
    ValidationError,
    create_model,
)

from app.auth.resource_server import linked_account
from app.auth.schemes import oauth2
from app.feature import Deps
from app.features.recipes import service
from app.features.recipes.schemas import RecipeDeleted, RecipeSaved, SavedRecipes
from app.mcp.entrypoints import OpenAIGlobalEntrypoint, quick_action
from app.mcp.errors import ToolFailure
from app.mcp.forms import Question, ask, must_ask, option, picker, still_offered
from app.mcp.registry import MentionLink, MentionSource, ToolRegistry
from app.mcp.results import tool_result
from app.mcp.settings import SettingsGroup
from app.mcp.widgets import Widget
from app.wording import Wording

say = Wording(__file__)
READ_SCOPE = "recipes.read"
WRITE_SCOPE = "recipes.write"

# Optional so that a call without one reaches the tool, which asks the person (a form) rather than
# the SDK refusing it: the description tells the model it may leave it out when it does not know.
Title = Annotated[
    Annotated[str, StringConstraints(strip_whitespace=True, max_length=service.MAX_TITLE)] | None,
    Field(description="The recipe's title, e.g. 'Lentil soup with lemon'. Leave it out when the "
          "user has not said which recipe: they are asked for it.")]
SourceUrl = Annotated[AnyHttpUrl, UrlConstraints(max_length=service.MAX_URL),
                      Field(description="Optional http(s) link to the recipe")]
RecipeId = Annotated[
    Annotated[str, Field(max_length=40)] | None,
    Field(description="Recipe id from list_saved_recipes. Leave it out when the user has not said "
          "which: they pick it from their saved recipes.")]
RECIPE_URI = "app://recipes/{recipe_id}"
MENTIONED = 10  # saved recipes offered to an @-mention
LINK = TypeAdapter(SourceUrl)


def recipe_uri(recipe_id: str) -> str:
    return RECIPE_URI.format(recipe_id=recipe_id)


class RecipeToSave(BaseModel):
    """The form of ``save_recipe`` called without a title."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=service.MAX_TITLE, title=say("Recipe title"),
                       description=say("The name to find it under, e.g. Lentil soup with "
                                       "lemon"))
    source_url: str = Field(default="", max_length=service.MAX_URL,
                            title=say("Link (optional)"),
                            description=say("Where the recipe is, if it is on the web"))


def title_form(link: str | None) -> type[RecipeToSave]:
    """The form with the link the call gave prefilled (the person may clear it)."""
    if link is None:
        return RecipeToSave
    return create_model("RecipeToSave", __base__=RecipeToSave, source_url=(str, Field(
        default=link, max_length=service.MAX_URL, title=say("Link (optional)"),
        description=say("Where the recipe is, if it is on the web"))))


TITLE = Question(
    key="title",
    message=say("Which recipe should be saved?"),
    form=title_form(None),
    needs=say("Saving a recipe needs its title, and none was given."),
    instead="Ask the user for the recipe's title, then call save_recipe again with `title` set to "
            "it (and `source_url` if they gave a link).",
    declined=say("Nothing was saved: no title was given."),
)
PICK = Question(
    key="recipe",
    message=say("Which saved recipe should be deleted?"),
    form=picker([option(recipe_uri("rcp_example"), "rcp_example", "Example")],
                title=say("Recipe"), description=say("The saved recipe to delete")),
    needs=say("Deleting a saved recipe needs to know which one, and none was named."),
    instead="Call list_saved_recipes, ask the user which recipe to delete, then call "
            "delete_saved_recipe again with `recipe_id` set to its id.",
    declined=say("Nothing was deleted: no recipe was chosen."),
)


def saved_result(recipes: SavedRecipes, links: dict[str, str] | None = None) -> CallToolResult:
    """The list; ``links`` (each recipe's link, by id) for the widget only, in ``_meta``: the
    structured shape stays the reference page's ``{id, title}``."""
    count = len(recipes.recipes)
    meta = {"linksById": links} if links else None
    if not count:
        return tool_result(recipes, "You have no saved recipes yet.", meta)
    titles = ", ".join(r.title for r in recipes.recipes)
    return tool_result(recipes, f"You have {count} saved {'recipe' if count == 1 else 'recipes'}: "
                       f"{titles}.", meta)


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


# The quick action's icon: a bookmark with a plus, drawn in the host's text colour.
SAVE_ICON = Path(__file__).with_name("save-recipe.svg")

def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db

    @registry.tool(
        name="list_saved_recipes",
        title=say("List saved recipes"),
        description="Returns the user's saved recipes without modifying them.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[oauth2(READ_SCOPE)],
        widget=RECIPES_WIDGET,
        # In ChatGPT's sidebar, with a shortcut to save one (save_recipe asks for the title).
        entrypoints=[OpenAIGlobalEntrypoint(quick_action=quick_action(
            "Save a recipe", "save_recipe", SAVE_ICON))],
        invoking="Opening your recipes…",
        invoked="Recipes ready",
    )
    async def list_saved_recipes() -> Annotated[CallToolResult, SavedRecipes]:
        account = linked_account(say("Saved recipes"))
        return saved_result(*await db.read(lambda uow: service.saved_with_links(uow, account)))

    @registry.tool(
        name="save_recipe",
        title=say("Save a recipe"),
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
    async def save_recipe(ctx: Context, title: Title = None, source_url: SourceUrl | None = None,
                          ) -> Annotated[CallToolResult, RecipeSaved]:
        account = linked_account(say("Saved recipes"))
        url = str(source_url) if source_url is not None else None
        if not title:  # none given, or only spaces: the person says which
            answer = ask(ctx, TITLE.with_form(title_form(url)))
            title, url = answer.title, _link(answer.source_url)
        named = title
        result = await db.write(lambda uow: service.save(uow, account, named, url,
                                                         accounts=deps.accounts))
        return saved_one_result(result, link_given=url is not None)

    @registry.tool(
        name="delete_saved_recipe",
        title=say("Delete a saved recipe"),
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
    async def delete_saved_recipe(ctx: Context, recipe_id: RecipeId = None,
                                  ) -> Annotated[CallToolResult, RecipeDeleted]:
        account = linked_account(say("Saved recipes"))
        if not recipe_id:  # the person picks among their own recipes
            must_ask(ctx, PICK)
            saved = (await db.read(lambda uow: service.saved(uow, account))).recipes
            choices = still_offered(ctx, PICK, [option(recipe_uri(r.id), r.id, r.title)
                                                for r in saved], "choice", recipe_uri(""))
            if not choices:
                raise ToolFailure(say("You have no saved recipes, so there is nothing to "
                                      "delete."),
                                  "Tell the user their list is empty; do not call "
                                  "delete_saved_recipe again.")
            form = picker(choices, title=say("Recipe"),
                          description=say("The saved recipe to delete"))
            recipe_id = ask(ctx, PICK.with_form(form)).choice.removeprefix(recipe_uri(""))
        picked = recipe_id
        return deleted_result(await db.write(lambda uow: service.delete(uow, account, picked)))

    async def recipes_to_mention(query: str, account: str | None) -> list[MentionLink]:
        """The account's saved recipes whose title holds what is typed, newest first."""
        assert account is not None  # asked only with the read scope's subject
        saved = (await db.read(lambda uow: service.saved(uow, account))).recipes
        typed = query.casefold()
        return [MentionLink(uri=recipe_uri(r.id), name=r.title, title=r.title,
                            mimeType="application/json")
                for r in saved if typed in r.title.casefold()][:MENTIONED]

    registry.mention_source(MentionSource("recipes", recipes_to_mention, READ_SCOPE))
    # A button among the settings: the person's saved recipes, in the recipes widget.
    registry.settings_group(SettingsGroup("Recipes", actions=("list_saved_recipes",)))

    @registry.account_resource(
        RECIPE_URI,
        name="saved_recipe",
        title="Saved recipe",
        description="One of the user's saved recipes: its title, link and when it was saved.",
        scopes=[READ_SCOPE],
    )
    async def saved_recipe(recipe_id: str) -> str | None:
        account = linked_account(say("Saved recipes"))
        found = await db.read(lambda uow: service.one(uow, account, recipe_id))
        return json.dumps(found.model_dump(mode="json"), ensure_ascii=False) if found else None


def _link(given: str) -> str | None:
    """The form's link: empty for none; anything else must be a web address."""
    if not given.strip():
        return None
    try:
        return str(LINK.validate_python(given.strip()))
    except ValidationError:
        raise ToolFailure(say("The link given in the form is not a web address, so nothing was "
                              "saved."),
                          "Ask the user for the recipe's web address (http or https), or save it "
                          "without one.") from None
