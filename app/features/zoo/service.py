"""Zoo use cases. Pure functions of a unit of work; they never commit."""

from __future__ import annotations

from app.db import UnitOfWork
from app.features.zoo.repository import AnimalRepository
from app.features.zoo.schemas import AnimalDetails, AnimalSummary, ZooAnimals


class AnimalNotFound(LookupError):
    pass


def list_animals(uow: UnitOfWork, count: int) -> tuple[ZooAnimals, dict[str, AnimalDetails]]:
    """The public list (model + widget) and the richer records keyed by id (widget only)."""
    rows = AnimalRepository(uow).first(count)
    summary = ZooAnimals(animals=[AnimalSummary(id=a.id, name=a.name, species=a.species) for a in rows])
    details = {a.id: AnimalDetails.model_validate(a) for a in rows}
    return summary, details


def animal_details(uow: UnitOfWork, animal_id: str) -> AnimalDetails:
    animal = AnimalRepository(uow).get(animal_id)
    if animal is None:
        raise AnimalNotFound(animal_id)
    return AnimalDetails.model_validate(animal)
