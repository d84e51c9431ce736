"""MCP tool of the search feature."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import Field

from app.features.search import service
from app.features.search.schemas import SearchResults
from app.mcp.registry import ToolRegistry
from app.mcp.results import tool_result
from app.mcp.security import NOAUTH, oauth2
from app.mcp.widgets import Widget

SEARCH_WIDGET = Widget(
    name="search-results",
    title="Search results",
    description="Lists matching documentation pages with titles, links and snippets; the user can see them.",
)


def search_result(q: str, results: SearchResults) -> CallToolResult:
    if not results.results:
        return tool_result(results, f"No documentation matches {q!r}.")
    lines = [f"{i}. {h.title} — {h.url}" for i, h in enumerate(results.results, 1)]
    return tool_result(results, f"Top {len(lines)} results for {q!r}:\n" + "\n".join(lines))


def register(registry: ToolRegistry) -> None:
    db = registry.db

    @registry.tool(
        name="search",
        title="Public Search",
        description="Full-text search of the Python standard library documentation. Returns ranked pages "
        "with a title, a docs.python.org URL and a matching snippet.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH, oauth2("search.read")],
        widget=SEARCH_WIDGET,
        invoking="Searching…",
        invoked="Results ready",
    )
    async def search(
        q: Annotated[str, Field(min_length=1, max_length=500, description="What to search for")],
    ) -> Annotated[CallToolResult, SearchResults]:
        return search_result(q, await db.run(lambda uow: service.search(uow, q)))
