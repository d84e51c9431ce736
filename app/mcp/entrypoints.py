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
from pathlib import Path
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


MAX_ICON_BYTES = 8192  # carried in every tools/list: an icon, not a picture


def svg_icon(svg: Path) -> Icon:
    """An SVG file of the feature's folder, carried in the descriptor itself (a ``data:`` URI):
    no request to another origin, nothing to host."""
    data = svg.read_bytes()
    if len(data) > MAX_ICON_BYTES:
        raise ValueError(f"{svg}: {len(data)} bytes; an icon holds at most {MAX_ICON_BYTES}")
    encoded = base64.b64encode(data).decode()
    return Icon(src=f"data:image/svg+xml;base64,{encoded}", mime_type="image/svg+xml")


def quick_action(title: str, tool: str, svg: Path,
                 arguments: Mapping[str, Any] | None = None) -> OpenAIUiQuickAction:
    """A sidebar shortcut calling ``tool`` (of this server) with ``arguments``; ``svg`` its icon."""
    return OpenAIUiQuickAction(title=title, icons=[svg_icon(svg)], target=(
        OpenAIUiQuickActionToolTarget(name=tool, arguments=dict(arguments) if arguments else None)))
