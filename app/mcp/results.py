"""Tool results (structuredContent for model + widget, _meta for the widget only) and request _meta."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.types import Annotations, CallToolResult, ContentBlock, TextContent
from pydantic import BaseModel

# Result _meta key: RFC 7235 challenges; on an error result it makes ChatGPT start account linking.
WWW_AUTHENTICATE = "mcp/www_authenticate"


def tool_result(output: BaseModel, text: str, widget_meta: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=output.model_dump(mode="json", by_alias=True, exclude_none=True),
        _meta=widget_meta or None,
    )


def request_meta(meta: Any) -> dict[str, Any]:
    """A request's ``_meta`` as a plain dict, whichever shape the SDK hands over (dict or model)."""
    if meta is None:
        return {}
    if isinstance(meta, Mapping):
        return dict(meta)
    return meta.model_dump(by_alias=True, exclude_none=True)


# MCP content annotations: who a block is written for. A failure says what happened to both
# readers and what to do next to the model alone (app.mcp.registry.failed); our widgets show the
# blocks written for the person, never advice meant for the model.
FOR_PERSON = Annotations(audience=["user", "assistant"])
FOR_MODEL = Annotations(audience=["assistant"])


def told_apart(message: str, advice: str) -> list[ContentBlock]:
    """What happened (``message``: the person reads it, and so does the model) and what the model
    does next (``advice``: the model's alone). The message is not marked for the person only: a
    host that honours the audience would then leave the model without it."""
    blocks: list[ContentBlock] = [TextContent(type="text", text=message, annotations=FOR_PERSON)]
    if advice:
        blocks.append(TextContent(type="text", text=advice, annotations=FOR_MODEL))
    return blocks

