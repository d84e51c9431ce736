"""What the baselines serve, of their own: the animal records (``bench/fixtures/animals.json``, a copy of the
zoo's seed data, so the app and the baselines answer the same bytes) and the result shapes, without importing
a demo feature's code. bench.py checks before timing that each target answers what the app answers, so a
change to the zoo's data or answer shows there. (The bench measures the zoo and search tools: a fork without
them benchmarks tools of its own.)"""

from __future__ import annotations

import json
from pathlib import Path

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict

FIXTURES = Path(__file__).resolve().parent / "fixtures"


class AnimalSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    species: str


class ZooAnimals(BaseModel):
    model_config = ConfigDict(extra="forbid")

    animals: list[AnimalSummary]


class AnimalDetails(BaseModel):
    model_config = ConfigDict(extra="forbid", from_attributes=True)

    id: str
    name: str
    species: str
    scientific_name: str
    habitat: str
    diet: str
    conservation_status: str
    lifespan_years: int
    weight_kg: float
    fun_fact: str
    enclosure: str
    likes: int


def fixture_animals() -> list[dict]:
    """The records, by name, with no likes yet (as a freshly seeded database has them)."""
    records = json.loads((FIXTURES / "animals.json").read_text(encoding="utf-8"))
    return sorted(({**a, "likes": 0} for a in records), key=lambda a: (a["name"], a["id"]))


def animals_result(animals: list[AnimalDetails], count: int) -> CallToolResult:
    """The zoo tool's answer: names for the transcript, the list for model and widget, the records for the widget."""
    chosen = animals[:count]
    summary = ZooAnimals(animals=[AnimalSummary(id=a.id, name=a.name, species=a.species) for a in chosen])
    names = ", ".join(f"{a.name} the {a.species.lower()}" for a in chosen)
    text = f"{len(chosen)} {'animal' if len(chosen) == 1 else 'animals'} at the zoo: {names}." if chosen else (
        "The zoo is empty.")
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=summary.model_dump(mode="json", by_alias=True, exclude_none=True),
                          _meta={"allAnimalsById": {a.id: a.model_dump(mode="json") for a in chosen}})
