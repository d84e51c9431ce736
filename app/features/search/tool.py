"""MCP tool of the search feature."""

from __future__ import annotations

from typing import Annotated

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from app.auth.resource_server import current_subject
from app.auth.schemes import NOAUTH, oauth2
from app.db import UnitOfWork
from app.feature import Deps
from app.features.search import service
from app.features.search.schemas import SearchResults
from app.mcp.registry import MentionLink, MentionSource, ToolRegistry
from app.mcp.results import tool_result
from app.mcp.settings import SettingsGroup
from app.mcp.widgets import Widget
from app.preferences import Preferences
from app.wording import Wording

say = Wording(__file__)
READ_SCOPE = "search.read"
MENTIONED = 5  # public pages offered to an @-mention
SEARCH_WIDGET = Widget(
    name="search",
    title="Search results",
    description="Lists the matching pages with their titles and links; the user can see them and open one, "
    "so there is no need to repeat the list.",
    # The shipped corpus is the Python documentation: its links open through openExternal.
    redirect_domains=("https://docs.python.org",),
)


def search_result(q: str, results: SearchResults) -> CallToolResult:
    hits = results.results
    # The widget links only what the host lets it open (a private note's URL may be elsewhere).
    widget_meta = {"linkOrigins": list(SEARCH_WIDGET.redirect_domains)}
    if not hits:
        return tool_result(results, f"No documentation matches {q!r}.", widget_meta)
    lines = [f"{i}. {h.title} — {h.url}" for i, h in enumerate(hits, 1)]
    heading = f"Top result for {q!r}:" if len(hits) == 1 else f"Top {len(hits)} results for {q!r}:"
    return tool_result(results, heading + "\n" + "\n".join(lines), widget_meta)


class SearchSettings(BaseModel):
    """Search's section of the account's settings."""

    search_mine: bool = Field(default=True, title="Search my own documents",
                              description="Include the notes and files kept with your account in "
                              "search results, beside the public documentation")


def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db
    registry.settings_group(SettingsGroup("Search", SearchSettings))

    @registry.tool(
        name="search",
        title=say("Public Search"),
        description="Full-text search of the Python standard library documentation. Returns ranked pages "
        "with a title, a docs.python.org URL and a matching snippet. With a linked account it also "
        "searches that account's private documents.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH, oauth2(READ_SCOPE)],
        widget=SEARCH_WIDGET,
        budget="60/minute",  # a ranked full-text query per call
        invoking="Searching…",
        invoked="Results ready",
    )
    async def search(
        q: Annotated[str, Field(min_length=1, max_length=500, description="What to search for")],
    ) -> Annotated[CallToolResult, SearchResults]:
        # Anonymous callers (and tokens without search.read) see public documents only; so does
        # an account that chose to leave its own out (its setting, read in the same transaction).
        viewer = current_subject(READ_SCOPE)

        def run(uow: UnitOfWork) -> SearchResults:
            mine = viewer is not None and Preferences.of(uow, viewer, SearchSettings).search_mine
            return service.search(uow, q, viewer=viewer if mine else None)

        return search_result(q, await db.read(run))

    async def pages_to_mention(query: str, _: str | None) -> list[MentionLink]:
        """Public pages matching what is typed (nothing before a word is typed)."""
        if not service.tokens(query):
            return []
        found = await db.read(lambda uow: service.search(uow, query, limit=MENTIONED))
        return [MentionLink(uri=hit.url, name=hit.title, title=hit.title,
                            description=hit.snippet[:160] or None, mimeType="text/html")
                for hit in found.results]

    registry.mention_source(MentionSource("search", pages_to_mention))
