from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema


class Profile(BaseModel):
    """ChatGPT's profile shape: only ``id`` is required; absent fields are omitted, never null."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"\S", description="Opaque account id, stable across sign-ins")
    name: str | SkipJsonSchema[None] = Field(default=None, description="Display name")
    email: str | SkipJsonSchema[None] = Field(default=None, description="Email address")
    nickname: str | SkipJsonSchema[None] = Field(default=None, description="User name")
