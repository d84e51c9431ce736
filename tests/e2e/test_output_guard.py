"""A tool whose structuredContent breaks its published outputSchema is caught, not shipped.

Through the server exactly as ``create_app`` builds it, over real HTTP: removing the
guard from that composition makes these tests fail.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import pytest
from mcp.client import Client
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from app.auth.schemes import NOAUTH
from app.feature import Deps, Feature
from app.main import create_app
from app.mcp.registry import ToolRegistry
from app.settings import load_settings
from tests.serving import serving

pytestmark = pytest.mark.anyio


class Out(BaseModel):
    count: int


def _tools(registry: ToolRegistry, deps: Deps) -> None:
    common = dict(read_only=True, destructive=False, open_world=False, security=[NOAUTH])

    @registry.tool(name="liar", title="Liar", description="Returns a string where an int is promised", **common)
    async def liar() -> Annotated[CallToolResult, Out]:
        # "3" passes pydantic's lax validation in the SDK, yet the wire schema says integer.
        return CallToolResult(content=[TextContent(type="text", text="x")], structured_content={"count": "3"})

    @registry.tool(name="honest", title="Honest", description="Keeps its promise", **common)
    async def honest() -> Annotated[CallToolResult, Out]:
        return CallToolResult(content=[TextContent(type="text", text="3")], structured_content={"count": 3})


@pytest.fixture(scope="module")
def server(database_url: str) -> Iterator[str]:
    def build(base_url: str):
        settings = load_settings(database_url=database_url, base_url=base_url, _env_file=None)
        return create_app(settings, features=[Feature(name="liars", tools=_tools)])

    with serving(build) as base_url:
        yield f"{base_url}/mcp"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_result_that_breaks_its_output_schema_is_withheld(server: str, mode: str):
    async with Client(server, mode=mode) as client:
        lax = await client.call_tool("liar", {})
        good = await client.call_tool("honest", {})
    assert lax.is_error is True and lax.structured_content is None
    said = ("The answer could not be shown: the server made a mistake, and it is logged for the "
            "operator.")
    assert [(block.text, block.annotations.audience if block.annotations else None)
            for block in lax.content] == [
        (said, ["user", "assistant"]),
        ("Tool liar produced a result that does not match its declared output schema; the "
         "result was withheld. Tell the user the answer could not be shown; calling the tool "
         "again will fail the same way until the server is fixed.", ["assistant"])]
    assert good.is_error is not True and good.structured_content == {"count": 3}
