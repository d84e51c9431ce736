"""MCP tools of the zoo feature."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field, WithJsonSchema

from app.auth.resource_server import signed_in
from app.auth.schemes import NOAUTH
from app.db.cache import ReadCache
from app.feature import Deps
from app.features.zoo import service
from app.features.zoo.schemas import AnimalDetails, AnimalDetailsOutput, Like, ZooAnimals
from app.i18n import lookup, requested_locale
from app.mcp.entrypoints import OpenAIThreadEntrypoint
from app.mcp.registry import ToolRegistry
from app.mcp.results import request_meta, tool_result
from app.mcp.settings import SettingsGroup
from app.mcp.widgets import Widget
from app.preferences import Preferences
from app.wording import Wording

say = Wording(__file__)
ZOO_WIDGET = Widget(
    name="zoo",
    title="Zoo animals",
    description="Shows the listed zoo animals as cards; tapping one opens its details. "
    "The cards already show names and species, so there is no need to repeat them.",
    display_modes=("inline", "fullscreen"),
)


class ZooSettings(BaseModel):
    """The zoo's section of the account's settings."""

    zoo_count: int = Field(default=10, ge=1, le=20, title="Animals to list",
                           description="How many animals the zoo shows when you don't say (1-20)")


def animals_result(summary: ZooAnimals, details: dict[str, AnimalDetails],
                   species: Mapping[str, str], language: str = "en") -> CallToolResult:
    """Names for the transcript (in English, the model's working language: it answers in the
    person's), the list for model + widget and the full records for the widget only, both in the
    person's language."""
    names = ", ".join(f"{a.name} the {species.get(a.id, a.species).lower()}"
                      for a in summary.animals)
    count = len(summary.animals)
    text = f"{count} {'animal' if count == 1 else 'animals'} at the zoo: {names}." if count else "The zoo is empty."
    return tool_result(summary, text, {
        "allAnimalsById": {k: v.model_dump(mode="json") for k, v in details.items()},
        "locale": language})


def language_of(ctx: Context) -> str:
    """The person's language among the zoo's, from the locale ChatGPT sends (else English)."""
    return lookup(requested_locale(request_meta(ctx.request_context.meta)), service.LANGUAGES)


def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db
    # Reference data: fresh in this worker after a like, at most APP_CACHE_TTL seconds old elsewhere.
    animals = ReadCache[list[AnimalDetails]](deps.settings.cache_ttl)

    async def zoo(language: str = "en") -> list[AnimalDetails]:
        return await animals.get(language, lambda: db.read(
            lambda uow: service.all_animals(uow, language)))

    registry.settings_group(SettingsGroup("Zoo", ZooSettings))

    @registry.tool(
        name="get_zoo_animals",
        title=say("Meet the zoo animals"),
        description="List animals living at the zoo, with their species. Use when the user wants to see "
        "or learn about the zoo's animals.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH],
        widget=ZOO_WIDGET,
        # From a conversation's side panel: the animals, as many as the account's setting says.
        entrypoints=[OpenAIThreadEntrypoint()],
        invoking="Visiting the enclosures…",
        invoked="Animals found",
    )
    async def get_zoo_animals(
        ctx: Context,
        # Published as a plain integer (not "integer or null"): None only says it was left out.
        count: Annotated[int | None, Field(ge=1, le=20), WithJsonSchema({
            "type": "integer", "minimum": 1, "maximum": 20, "description": "How many animals to "
            "list (1-20); left out: the user's setting, else 10"})] = None,
    ) -> Annotated[CallToolResult, ZooAnimals]:
        if count is None:  # the account's own choice when it has one (one read, linked only)
            subject = signed_in()
            count = (await db.read(lambda uow: Preferences.of(uow, subject, ZooSettings))
                     ).zoo_count if subject else ZooSettings().zoo_count
        language = language_of(ctx)
        summary, details = service.listing(await zoo(language), count)
        species = {a.id: a.species for a in await zoo()}  # English, for the transcript
        return animals_result(summary, details, species, language)

    @registry.tool(
        name="get_zoo_animal_details",
        title=say("Zoo animal details"),
        description="Full record of one zoo animal (habitat, diet, conservation status). Called by the zoo "
        "widget when the user opens an animal card.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH],
        widget=ZOO_WIDGET,
        visibility=["app"],
        invoking="Opening the animal's file…",
        invoked="Animal details ready",
    )
    async def get_zoo_animal_details(
        ctx: Context,
        animal_id: Annotated[str, Field(min_length=1, max_length=64, description="Animal id from get_zoo_animals")],
    ) -> Annotated[CallToolResult, AnimalDetailsOutput]:
        language = language_of(ctx)
        animal = service.find(await zoo(language), animal_id)
        said = service.find(await zoo(), animal_id) if language != "en" else animal
        text = (f"{said.name} is a {said.species} ({said.scientific_name}), "
                f"IUCN status: {said.conservation_status}. {said.fun_fact}")
        return tool_result(AnimalDetailsOutput(animal=animal), text, {"locale": language})

    @registry.tool(
        name="like_zoo_animal",
        title=say("Like a zoo animal"),
        description="Record that the user likes one zoo animal (the zoo widget's heart button). Returns the "
        "animal's new like count.",
        read_only=False,
        destructive=False,
        open_world=False,
        idempotent=False,
        security=[NOAUTH],
        widget=ZOO_WIDGET,
        invoking="Sending your like…",
        invoked="Liked",
    )
    async def like_zoo_animal(
        animal_id: Annotated[str, Field(min_length=1, max_length=64, description="Animal id from get_zoo_animals")],
    ) -> Annotated[CallToolResult, Like]:
        try:
            like = await db.write(lambda uow: service.like(uow, animal_id))
        finally:  # even if this call is cancelled after the commit: the worker must see its own write
            animals.invalidate()
        return tool_result(like, f"{like.name} now has {like.likes} {'like' if like.likes == 1 else 'likes'}.")
