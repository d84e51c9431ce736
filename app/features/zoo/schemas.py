from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AnimalSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable animal id")
    name: str = Field(description="The animal's name at the zoo")
    species: str = Field(description="Common species name")


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
    likes: int = Field(description="How many times visitors liked this animal")


class AnimalDetailsOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    animal: AnimalDetails


class Like(BaseModel):
    model_config = ConfigDict(extra="forbid")

    animal_id: str
    name: str
    likes: int = Field(description="The animal's like count, this like included")
