"""Assemble the MCP server from the discovered features."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from app.db import Database
from app.features import tool_modules
from app.mcp.middleware import OutputGuard, ToolCallLog, restore_security_schemes
from app.mcp.registry import ToolRegistry
from app.settings import Settings

INSTRUCTIONS = (
    "Tools for searching the Python standard library documentation, meeting the zoo's animals, "
    "and finding a café nearby. Results render in widgets; do not repeat what a widget shows."
)


def build_registry(settings: Settings, db: Database) -> ToolRegistry:
    registry = ToolRegistry(settings=settings, db=db, instructions=INSTRUCTIONS)
    for module in tool_modules():
        module.register(registry)
    return registry


def build_mcp_server(settings: Settings, db: Database) -> MCPServer:
    guard = OutputGuard()
    # Outermost first: the log sees the guarded result, the guard sees the restored descriptor-free result.
    server = build_registry(settings, db).build(middleware=[ToolCallLog(), guard, restore_security_schemes])
    guard.bind(server)
    return server
