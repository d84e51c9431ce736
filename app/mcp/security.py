"""securitySchemes values (SPEC §1): what a tool accepts, declared per tool."""

from __future__ import annotations

from typing import Any

NOAUTH: dict[str, Any] = {"type": "noauth"}


def oauth2(*scopes: str) -> dict[str, Any]:
    return {"type": "oauth2", "scopes": list(scopes)}

