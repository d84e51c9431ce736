"""Assemble the MCP server from a filled registry, with the middleware every request passes through."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from app.mcp.budgets import ToolBudgets
from app.mcp.middleware import OutputGuard, StorableText, ToolCallLog, restore_security_schemes
from app.mcp.registry import ToolRegistry
from app.observability.metrics import Metrics


def build_mcp_server(registry: ToolRegistry, budgets: ToolBudgets, *, instructions: str | None = None,
                     metrics: Metrics | None = None) -> MCPServer:
    guard = OutputGuard()
    # Outermost first: the log sees the guarded result; the guard sees what the budgets let through; a call
    # refused for its text costs no budget.
    text = StorableText(set(registry.tool_names))
    server = registry.build(instructions=instructions,
                            middleware=[ToolCallLog(metrics), guard, text, budgets, restore_security_schemes])
    guard.bind(server)
    return server
