"""MCP tool of the cafés feature."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from app.auth.schemes import NOAUTH
from app.db.cache import ReadCache
from app.feature import Deps
from app.features.cafes import service
from app.features.cafes.schemas import CafeRecommendations
from app.i18n import lookup, requested_locale
from app.mcp.registry import ToolRegistry
from app.mcp.results import request_meta, tool_result
from app.mcp.widgets import Widget

CAFE_WIDGET = Widget(
    name="cafes",
    title="Café finder",
    description="Shows the recommended cafés as cards with their neighbourhood, address and a map link; "
    "the list is already visible to the user.",
    redirect_domains=(service.MAP_ORIGIN,),
)


MAX_HINT = 120
MAX_LOCALE = 35  # the longest BCP 47 tags in use


def _city_hint(meta: dict[str, Any]) -> str | None:
    location = meta.get("openai/userLocation")
    if isinstance(location, dict):
        city = location.get("city")
        if isinstance(city, str) and city.strip():
            return city.strip()[:MAX_HINT]  # a city name, not a payload: it is also a cache key
    return None


def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db
    # Cafés change only when seeded: each answer is kept APP_CACHE_TTL seconds per worker.
    answers = ReadCache[service.Recommendation](deps.settings.cache_ttl)

    @registry.tool(
        name="recommend_cafe",
        title="Recommend a café",
        description="Recommend well-known cafés near the user (uses the coarse city and locale ChatGPT "
        "provides). No input needed.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH],
        widget=CAFE_WIDGET,
        invoking="Looking for cafés nearby…",
        invoked="Cafés found",
    )
    async def recommend_cafe(ctx: Context) -> Annotated[CallToolResult, CafeRecommendations]:
        meta = request_meta(ctx.request_context.meta)
        locale_tag = (requested_locale(meta) or "")[:MAX_LOCALE] or None
        language = lookup(locale_tag, service.LANGUAGES)
        hint = _city_hint(meta)
        rec = await answers.get((language, locale_tag, hint),
                                lambda: db.read(lambda uow: service.recommend(uow, language, locale_tag, hint)))
        lines = [rec.intro, *(f"- {c.name}, {c.address}" for c in rec.output.cafes)]
        return tool_result(rec.output, "\n".join(lines), {"cafesById": rec.details, "locale": language})
