"""Where ChatGPT opens the app from (openai/mcp-extensions docs/spec.md, "Entrypoints"): the
sidebar (global, with a quick action), a conversation's side panel (thread), a file (Desktop).

A tool declares them with OpenAI's own models: ``registry.tool(..., entrypoints=[...])``. The
registry refuses a tool the host could not call that way (a global or thread entrypoint calls it
with ``{}``), and ``check`` says the same of any server's listed tools. Entrypoints open the
tool's widget full screen.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from mcp_types import Icon
from openai_mcp_extensions import (
    OpenAIFileEntrypoint,
    OpenAIGlobalEntrypoint,
    OpenAIThreadEntrypoint,
    OpenAIUiQuickAction,
    OpenAIUiQuickActionToolTarget,
)

__all__ = ["OpenAIFileEntrypoint", "OpenAIGlobalEntrypoint", "OpenAIThreadEntrypoint",
           "quick_action", "svg_icon"]


def svg_icon(svg: str) -> Icon:
    """An icon carried in the descriptor itself (a ``data:`` URI): no request to another
    origin, nothing to host."""
    data = base64.b64encode(svg.encode()).decode()
    return Icon(src=f"data:image/svg+xml;base64,{data}", mime_type="image/svg+xml")


def quick_action(title: str, tool: str, svg: str,
                 arguments: Mapping[str, Any] | None = None) -> OpenAIUiQuickAction:
    """A sidebar shortcut calling ``tool`` (of this server) with ``arguments``."""
    return OpenAIUiQuickAction(title=title, icons=[svg_icon(svg)], target=(
        OpenAIUiQuickActionToolTarget(name=tool, arguments=dict(arguments) if arguments else None)))
