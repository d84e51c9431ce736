"""securitySchemes values (SPEC §1): what a tool accepts, declared per tool."""

from __future__ import annotations

from typing import Any

NOAUTH: dict[str, Any] = {"type": "noauth"}


def oauth2(*scopes: str) -> dict[str, Any]:
    return {"type": "oauth2", "scopes": list(scopes)}


def allows_anonymous(schemes: list[dict[str, Any]]) -> bool:
    return any(s.get("type") == "noauth" for s in schemes)


def required_scopes(schemes: list[dict[str, Any]]) -> set[str]:
    scopes: set[str] = set()
    for s in schemes:
        if s.get("type") == "oauth2":
            scopes.update(s.get("scopes", []))
    return scopes
