"""A section of the settings as an account chose it: shared by the settings tools
(``app.mcp.settings``) and the features reading their own section (``Preferences.of``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def filled(kind: type[M], stored: Mapping[str, Any]) -> M:
    """``kind`` as the account chose it, each value checked on its own: one the group no longer
    accepts (a changed type, a narrower range) falls back to its default alone."""
    chosen: dict[str, Any] = {}
    for key in kind.model_fields.keys() & stored.keys():
        try:
            kind.model_validate({key: stored[key]})
        except ValidationError:
            continue
        chosen[key] = stored[key]
    return kind.model_validate(chosen)
