"""The one place tools and widgets are declared, with every ChatGPT metadata key derived for them.

A feature's ``register(registry)`` calls ``registry.tool(...)``; ``build()``
then assembles the SDK's ``MCPServer`` (MCP Apps extension for widget-bound
tools, plain tools otherwise) and the middleware that restores what the SDK
drops on the wire.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp.server.apps import Apps, Visibility
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import TextResource
from mcp.types import ToolAnnotations

from app import __version__
from app.db import Database, DatabaseUnavailable
from app.mcp.widgets import Widget
from app.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
MAX_STATUS_CHARS = 64


@dataclass
class _ToolSpec:
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    meta: dict[str, Any]
    widget: Widget | None
    visibility: list[Visibility] | None


@dataclass
class ToolRegistry:
    settings: Settings
    db: Database
    name: str = "chatgpt-app-server"
    instructions: str | None = None
    _tools: list[_ToolSpec] = field(default_factory=list)
    _widgets: dict[str, Widget] = field(default_factory=dict)

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        read_only: bool,
        destructive: bool,
        open_world: bool,
        idempotent: bool | None = None,
        security: list[dict[str, Any]],
        widget: Widget | None = None,
        visibility: list[Visibility] | None = None,
        invoking: str | None = None,
        invoked: str | None = None,
        file_params: list[str] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        for label, text in (("invoking", invoking), ("invoked", invoked)):
            if text is not None and len(text) > MAX_STATUS_CHARS:
                raise ValueError(f"{name}: {label} status is {len(text)} chars, ChatGPT allows {MAX_STATUS_CHARS}")
        tool_meta: dict[str, Any] = {**(meta or {}), "securitySchemes": [dict(s) for s in security]}
        if widget is not None:
            tool_meta["openai/outputTemplate"] = widget.uri
            app_visible = visibility is None or "app" in visibility
            tool_meta["openai/widgetAccessible"] = app_visible
            if visibility == ["app"]:
                tool_meta["openai/visibility"] = "private"
            self._widgets.setdefault(widget.name, widget)
        if invoking:
            tool_meta["openai/toolInvocation/invoking"] = invoking
        if invoked:
            tool_meta["openai/toolInvocation/invoked"] = invoked
        if file_params:
            tool_meta["openai/fileParams"] = list(file_params)
        annotations = ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            open_world_hint=open_world,
            idempotent_hint=idempotent,
        )

        def decorator(fn: F) -> F:
            kwargs = {"name": name, "title": title, "description": description, "annotations": annotations}
            self._tools.append(_ToolSpec(_guard(fn), kwargs, tool_meta, widget, visibility))
            return fn

        return decorator

    @property
    def widgets(self) -> list[Widget]:
        return list(self._widgets.values())

    def build(self, middleware: list[Any] | None = None) -> MCPServer:
        apps = Apps()
        domain = self.settings.widget_domain
        for widget in self._widgets.values():
            apps.add_resource(
                TextResource(
                    uri=widget.uri,
                    name=widget.name,
                    title=widget.title,
                    description=widget.description,
                    text=widget.html,
                    meta=widget.resource_meta(domain),
                )
            )
        plain: list[_ToolSpec] = []
        for spec in self._tools:
            if spec.widget is None:
                plain.append(spec)
                continue
            apps.tool(resource_uri=spec.widget.uri, visibility=spec.visibility, meta=spec.meta, **spec.kwargs)(
                spec.fn
            )
        server = MCPServer(
            self.name,
            title="ChatGPT App Server",
            instructions=self.instructions,
            version=__version__,
            extensions=[apps],
            middleware=middleware or [],
            warn_on_duplicate_tools=True,
        )
        for spec in plain:
            server.add_tool(spec.fn, meta=spec.meta, **spec.kwargs)
        return server


def _guard(fn: F) -> F:
    """Turn infrastructure failures into a clear tool error instead of the SDK's generic crash text."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except DatabaseUnavailable as exc:
            raise ToolError(str(exc)) from exc

    return wrapper  # type: ignore[return-value]
