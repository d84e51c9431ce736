"""MCP tool of the cafés feature."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, ConfigDict, Field, JsonValue, create_model

from app.auth.resource_server import signed_in
from app.auth.schemes import NOAUTH
from app.db.cache import ReadCache
from app.feature import Deps
from app.features.cafes import service
from app.features.cafes.schemas import CafeRecommendations
from app.features.cafes.settings import CafesMapSettings, origin_of
from app.i18n import lookup, requested_locale
from app.mcp.entrypoints import OpenAIThreadEntrypoint
from app.mcp.forms import Question, ask, can_ask
from app.mcp.registry import ToolRegistry
from app.mcp.results import request_meta, tool_result
from app.mcp.settings import SettingsGroup
from app.mcp.widgets import Widget
from app.preferences import Preferences
from app.wording import Wording

say = Wording(__file__)


def cafe_widget(settings: CafesMapSettings) -> Widget:
    """The widget, declaring the origin its map tiles come from and the pages it opens."""
    tiles = settings.tiles_origin
    opened = dict.fromkeys([service.MAP_ORIGIN, origin_of(settings.map_attribution_url)
                            if settings.map_attribution_url else service.MAP_ORIGIN])
    return Widget(
        name="cafes",
        title="Café finder",
        description="Shows the recommended cafés on a map and as cards with their neighbourhood, "
        "address and a map link; the list is already visible to the user.",
        resource_domains=(tiles,) if tiles else (),
        redirect_domains=tuple(opened),
    )


def map_meta(settings: CafesMapSettings) -> dict[str, str] | None:
    """What the widget's map needs (widget-only ``_meta.map``): None when no tiles are set."""
    if not settings.map_tiles:
        return None
    return {"tiles": settings.map_tiles, "attribution": settings.map_attribution,
            "attributionUrl": settings.map_attribution_url}


MAX_HINT = 120
MAX_LOCALE = 35  # the longest BCP 47 tags in use


def _city_hint(meta: dict[str, Any]) -> str | None:
    location = meta.get("openai/userLocation")
    if isinstance(location, dict):
        city = location.get("city")
        if isinstance(city, str) and city.strip():
            return city.strip()[:MAX_HINT]  # a city name, not a payload: it is also a cache key
    return None


City = Annotated[
    Annotated[str, Field(max_length=MAX_HINT)] | None,
    Field(description="The city to look in, when the user names one. Leave it out to use the "
          "user's location; when that is unknown too, the user is asked.")]


class CafeCity(BaseModel):
    """The form of ``recommend_cafe`` when no city is known."""

    model_config = ConfigDict(extra="forbid")

    city: str = Field(min_length=1, max_length=MAX_HINT, title=say("City"),
                      description=say("Where to look for cafés"))


def city_form(cities: list[str]) -> type[CafeCity]:
    """The form with the cities known here as suggestions (any other may be typed)."""
    if not cities:
        return CafeCity
    suggestions: list[JsonValue] = [{"const": name, "title": name} for name in cities]
    return create_model("CafeCity", __base__=CafeCity, city=(str, Field(
        min_length=1, max_length=MAX_HINT, title=say("City"),
        description=say("Where to look for cafés"),
        json_schema_extra={"x-openai-suggestions": suggestions})))


class CafeSettings(BaseModel):
    """The cafés' section of the account's settings."""

    home_city: str = Field(default="", max_length=MAX_HINT, title="Home city",
                           description="Where to look for cafés when you don't name a city and "
                           "ChatGPT doesn't share your location")
    cafe_language: Literal["auto", "en", "es", "fr", "pt", "zh"] = Field(
        default="auto", title="Language of café descriptions",
        description="auto: the language ChatGPT uses; else en, es, fr, pt or zh")


CITY = Question(
    key="city",
    message=say("Which city should I find cafés in?"),
    form=city_form(["Lisbon", "Paris"]),
    needs=say("Recommending cafés needs a city, and none is known."),
    instead="Ask the user which city they are in, then call recommend_cafe again with `city` set "
            "to it.",
    declined=say("No cafés were looked for: no city was given."),
)


def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db
    map_settings = deps.part(CafesMapSettings)
    widget, view = cafe_widget(map_settings), map_meta(map_settings)
    map_view = {"map": view} if view else {}
    # Cafés change only when seeded: each answer is kept APP_CACHE_TTL seconds per worker.
    answers = ReadCache[service.Recommendation](deps.settings.cache_ttl)
    registry.settings_group(SettingsGroup("Cafés", CafeSettings))

    @registry.tool(
        name="recommend_cafe",
        title=say("Recommend a café"),
        description="Recommend well-known cafés in a city: the one the user names (`city`), else "
        "the coarse city and locale ChatGPT provides; when neither is known the user is asked.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH],
        widget=widget,
        # From a conversation's side panel: cafés in the account's home city, else asked.
        entrypoints=[OpenAIThreadEntrypoint()],
        invoking="Looking for cafés nearby…",
        invoked="Cafés found",
    )
    async def recommend_cafe(ctx: Context, city: City = None,
                             ) -> Annotated[CallToolResult, CafeRecommendations]:
        meta = request_meta(ctx.request_context.meta)
        locale_tag = (requested_locale(meta) or "")[:MAX_LOCALE] or None
        # A linked account's own choices (one read): the city after the call's argument and
        # ChatGPT's location, a chosen language before ChatGPT's, which is its general one.
        subject = signed_in()
        chosen = (await db.read(lambda uow: Preferences.of(uow, subject, CafeSettings))
                  if subject else CafeSettings())
        # The region of ChatGPT's locale still names the default city (pt-BR: São Paulo).
        language = (chosen.cafe_language if chosen.cafe_language != "auto"
                    else lookup(locale_tag, service.LANGUAGES))
        hint = ((city.strip() or None if city else None) or _city_hint(meta)
                or chosen.home_city.strip() or None)
        if hint is None and can_ask(ctx):  # no city anywhere: the person says which
            names = await db.read(lambda uow: service.city_names(uow, language))
            hint = ask(ctx, CITY.with_form(city_form(names))).city.strip()[:MAX_HINT] or None
        # Elsewhere (a client that cannot show the form) the locale's own city answers, and the
        # result tells the model how to ask for another: a recommendation is still of use.
        rec = await answers.get((language, locale_tag, hint),
                                lambda: db.read(lambda uow: service.recommend(uow, language, locale_tag, hint)))
        lines = [rec.intro, *(f"- {c.name}, {c.address}" for c in rec.output.cafes)]
        if hint is None:
            lines.append(f"(The user's city is not known. If they are not in {rec.output.city}, "
                         "ask which city, then call recommend_cafe again with `city` set to it.)")
        return tool_result(rec.output, "\n".join(lines),
                           {"cafesById": rec.details, "locale": language, "cityName": rec.city_name,
                            **map_view})
