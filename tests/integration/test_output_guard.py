"""A tool whose structuredContent breaks its published outputSchema is caught, not shipped."""

from __future__ import annotations

from typing import Annotated

import pytest
from mcp.client import Client
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from app.mcp.middleware import OutputGuard, restore_security_schemes
from app.mcp.registry import ToolRegistry
from app.mcp.security import NOAUTH

pytestmark = pytest.mark.anyio


class Out(BaseModel):
    count: int


def _server(settings, db):
    registry = ToolRegistry(settings=settings, db=db)
    common = dict(read_only=True, destructive=False, open_world=False, security=[NOAUTH])

    @registry.tool(name="liar", title="Liar", description="Returns a string where an int is promised", **common)
    async def liar() -> Annotated[CallToolResult, Out]:
        # "3" passes pydantic's lax validation in the SDK, yet the wire schema says integer.
        return CallToolResult(content=[TextContent(type="text", text="x")], structured_content={"count": "3"})

    @registry.tool(name="garbage", title="Garbage", description="Returns nonsense", **common)
    async def garbage() -> Annotated[CallToolResult, Out]:
        return CallToolResult(content=[TextContent(type="text", text="x")], structured_content={"count": "many"})

    @registry.tool(name="honest", title="Honest", description="Keeps its promise", **common)
    async def honest() -> Annotated[CallToolResult, Out]:
        return CallToolResult(content=[TextContent(type="text", text="3")], structured_content={"count": 3})

    guard = OutputGuard()
    server = registry.build(middleware=[guard, restore_security_schemes])
    guard.bind(server)
    return server


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_result_that_breaks_its_output_schema_is_withheld(settings, db, mode):
    async with Client(_server(settings, db), mode=mode) as client:
        lax = await client.call_tool("liar", {})
        garbage = await client.call_tool("garbage", {})
        good = await client.call_tool("honest", {})
    assert lax.is_error is True and lax.structured_content is None
    assert "does not match its declared output schema" in lax.content[0].text
    # The SDK's own model check catches outright garbage first; either way nothing ships.
    assert garbage.is_error is True and garbage.structured_content is None
    assert good.is_error is not True and good.structured_content == {"count": 3}
