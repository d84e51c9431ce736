"""A per-request dict that inner layers (the MCP middleware) fill and the access log reads.

A dict shared by reference, rather than contextvars set deep inside, because the
MCP handler may run in a child task whose contextvar writes never flow back.
"""

from __future__ import annotations

import contextvars
from typing import Any

_info: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("request_info", default=None)


def current_request_info() -> dict[str, Any] | None:
    return _info.get()


def set_request_info(info: dict[str, Any]) -> contextvars.Token[dict[str, Any] | None]:
    return _info.set(info)


def reset_request_info(token: contextvars.Token[dict[str, Any] | None]) -> None:
    _info.reset(token)
