from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CafeOut(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    address: str


class CafeRecommendations(BaseModel):
    model_config = ConfigDict(extra="forbid")

    city: str = Field(description="The city the cafés are in")
    cafes: list[CafeOut]
