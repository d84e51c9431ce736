"""A foreseen failure (``ToolFailure``) becomes an ``isError`` result in the registry, with the person's text first
and the model's advice after it; anything else a tool raises is still the SDK's business."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from mcp.client import Client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from app.auth.schemes import NOAUTH
from app.limits import Limits
from app.limits.counters import LocalCounter
from app.mcp.budgets import ToolBudgets
from app.mcp.errors import ToolFailure
from app.mcp.registry import ToolRegistry
from app.mcp.server import build_mcp_server

pytestmark = pytest.mark.anyio
HINTS = dict(read_only=True, destructive=False, open_world=False, security=[NOAUTH])
FEATURES = Path(__file__).resolve().parents[2] / "app" / "features"


class Out(BaseModel):
    n: int


class ShelfFull(ToolFailure):
    advice = "Ask the user which book to take off the shelf (remove_book) before adding another."

    def __init__(self, limit: int) -> None:
        super().__init__(f"The shelf already holds {limit} books.")


def _registry() -> ToolRegistry:
    registry = ToolRegistry(widget_domain="https://w.example.com", name="test-server", title="Test Server",
                            resource_metadata_url="https://mcp.example.com/.well-known/oauth-protected-resource/mcp")

    @registry.tool(name="add_book", title="Add a book", description="d", **HINTS)
    async def add_book() -> Annotated[CallToolResult, Out]:
        raise ShelfFull(3)

    @registry.tool(name="find_book", title="Find a book", description="d", **HINTS)
    def find_book() -> Annotated[CallToolResult, Out]:  # sync: runs on a worker thread, caught all the same
        raise ToolFailure("No book has the id 'b9'.")

    @registry.tool(name="sdk_error", title="SDK error", description="d", **HINTS)
    async def sdk_error() -> Annotated[CallToolResult, Out]:
        raise ToolError("No book has the id 'b9'.")

    @registry.tool(name="pick_books", title="Pick books", description="d", **HINTS)
    async def pick_books(count: Annotated[int, Field(ge=1, le=10, description="How many books")],
                         genre: Literal["poetry", "prose"] = "prose",
                         ) -> Annotated[CallToolResult, Out]:
        return CallToolResult(content=[], structured_content={"n": count})

    @registry.tool(name="crash", title="Crash", description="d", **HINTS)
    async def crash() -> Annotated[CallToolResult, Out]:
        raise RuntimeError("SELECT * FROM books -- a driver's text")

    return registry


async def _call(name: str) -> dict[str, Any]:
    # The handshake-era mode: the 2026-07-28 envelope adds serverInfo to every result's _meta.
    async with Client(_registry().build(), mode="legacy") as client:
        result = await client.call_tool(name, {})
    answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    answer.pop("resultType")  # the client model's default, never sent by a handshake-era server
    return answer


async def test_a_tool_failure_is_an_error_result_with_the_message_first_and_the_advice_after():
    assert await _call("add_book") == {
        "content": [
            {"type": "text", "text": "The shelf already holds 3 books.",
             "annotations": {"audience": ["user", "assistant"]}},
            {"type": "text", "text": "Ask the user which book to take off the shelf (remove_book) before "
                                     "adding another.", "annotations": {"audience": ["assistant"]}},
        ],
        "isError": True,
    }


async def test_a_failure_without_advice_is_its_message_alone_without_the_sdks_words():
    assert await _call("find_book") == {
        "content": [{"type": "text", "text": "No book has the id 'b9'.",
                     "annotations": {"audience": ["user", "assistant"]}}], "isError": True}


@pytest.mark.sdk_wording  # the registry's bare server: the app's middleware rewords it (_served)
async def test_an_unexpected_exception_still_tells_the_model_nothing_but_that_the_tool_failed():
    assert await _call("crash") == {"content": [{"type": "text", "text": "Error executing tool crash"}],
                                    "isError": True}


async def _served(name: str, arguments: dict[str, Any]) -> list[str]:
    """The texts of an error result as the server's middleware leaves them (app.mcp.server)."""
    server = build_mcp_server(_registry(), ToolBudgets(Limits(LocalCounter()), {}))
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error is True
    return [block.text for block in result.content if isinstance(block, TextContent)]


async def test_served_a_crash_says_the_tool_failed_in_words_for_the_person_and_the_model():
    assert await _served("crash", {}) == [
        "Crash failed on the server before it finished; the failure is logged for the operator.",
        "Tell the user it did not work. Trying again with the same arguments is unlikely to help."]


async def test_served_a_tool_error_raised_by_a_tool_keeps_its_words_without_the_sdks():
    assert await _served("sdk_error", {}) == ["No book has the id 'b9'."]


@pytest.mark.parametrize("arguments,person,model", [
    ({}, "Pick books could not run: `count` is required.",
     "Call pick_books again with `count` set (How many books). If you do not know a value, ask the "
     "user for it rather than guessing."),
    ({"count": 50, "genre": "drama"},
     "Pick books could not run: `count` must be 10 or less; `genre` must be one of 'poetry' or "
     "'prose'.",
     "Call pick_books again with `count` fixed: it must be 10 or less, not 50 (How many books); "
     "`genre` fixed: it must be one of 'poetry' or 'prose', not 'drama'. If you do not know a "
     "value, ask the user for it rather than guessing."),
    ({"count": "many"}, "Pick books could not run: `count` must be a whole number.",
     "Call pick_books again with `count` fixed: it must be a whole number, not 'many' (How many "
     "books). If you do not know a value, ask the user for it rather than guessing."),
])
async def test_served_arguments_that_fail_the_schema_are_said_in_plain_words(arguments, person,
                                                                            model):
    assert await _served("pick_books", arguments) == [person, model]


async def test_the_failure_is_logged_by_class_never_by_its_text(json_log):
    await _call("add_book")
    [event] = [e for e in json_log() if e.get("event") == "tool.failure"]
    assert event["failure"] == "ShelfFull"
    assert "already holds" not in str(event)


def test_no_feature_raises_the_sdks_tool_error_itself():
    # The registry is the one place that maps failures; a feature importing ToolError would map its own.
    words = re.compile(r"\bToolError\b|mcpserver\.exceptions")
    offenders = [str(p.relative_to(FEATURES)) for p in FEATURES.rglob("*.py")
                 if words.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
