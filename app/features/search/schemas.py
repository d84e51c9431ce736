from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class SearchHit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable document id")
    title: str
    url: str = Field(description="Canonical documentation URL")
    snippet: str = Field(description="Matching passage, plain text")
    score: float = Field(description="Relevance within this response; higher is better")


class SearchResults(BaseModel):
    model_config = ConfigDict(extra="forbid")

    results: list[SearchHit]
