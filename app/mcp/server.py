"""Assemble the MCP server from a filled registry, with the middleware every request passes through."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer, RequestStateSecurity

from app.mcp.budgets import ToolBudgets
from app.mcp.middleware import (
    OutputGuard,
    StorableText,
    ToolCallLog,
    WireShapes,
    list_hints,
)
from app.mcp.registry import ToolRegistry
from app.observability.metrics import Metrics


def build_mcp_server(
    registry: ToolRegistry,
    budgets: ToolBudgets,
    *,
    instructions: str | None = None,
    metrics: Metrics | None = None,
    request_state: RequestStateSecurity | None = None,
) -> MCPServer:
    registry.complete()  # every tool declared before the middleware reads their names
    guard = OutputGuard(registry.explain, registry.title_of)
    # Outermost first: the log sees the guarded result; the guard sees what the budgets let through; a call
    # refused for its text costs no budget.
    text = StorableText(set(registry.tool_names))
    server = registry.build(
        instructions=instructions,
        middleware=[
            ToolCallLog(metrics),
            guard,
            text,
            budgets,
            WireShapes(registry.widget_uris),
        ],
        request_state=request_state,
        cache_hints=list_hints(),
    )
    guard.bind(server)
    return server
