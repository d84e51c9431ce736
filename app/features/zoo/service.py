"""Zoo use cases. Functions of a unit of work; they never commit."""

from __future__ import annotations

from collections.abc import Sequence

from app.db import UnitOfWork
from app.features.zoo.repository import AnimalRepository
from app.features.zoo.schemas import AnimalDetails, AnimalSummary, Like, ZooAnimals
from app.mcp.errors import ToolFailure
from app.wording import Wording

say = Wording(__file__)
# The languages the zoo's words are kept in (data/i18n/<language>.json beside English).
LANGUAGES = ("en", "es", "fr", "pt", "zh")


class AnimalNotFound(ToolFailure):
    advice = "Use an animal id from get_zoo_animals (call it again if unsure)."

    def __init__(self, animal_id: str) -> None:
        super().__init__(say("No zoo animal has the id {id}.", id=repr(animal_id)))
        self.animal_id = animal_id


def list_animals(uow: UnitOfWork, count: int) -> tuple[ZooAnimals, dict[str, AnimalDetails]]:
    """The public list (model + widget) and the richer records keyed by id (widget only)."""
    return listing([AnimalDetails.model_validate(a) for a in uow.repository(AnimalRepository).first(count)], count)


def all_animals(uow: UnitOfWork, language: str = "en") -> list[AnimalDetails]:
    """Every animal, by name, in ``language`` where its words are kept in it (else English): a few
    dozen rows of reference data, which the tools cache per process and language."""
    repo = uow.repository(AnimalRepository)
    texts = repo.texts(language) if language != "en" else {}
    animals = []
    for row in repo.first(None):
        animal = AnimalDetails.model_validate(row)
        if (words := texts.get(animal.id)) is not None:
            animal = animal.model_copy(update={
                "species": words.species, "habitat": words.habitat, "diet": words.diet,
                "fun_fact": words.fun_fact, "enclosure": words.enclosure})
        animals.append(animal)
    return animals


def listing(animals: Sequence[AnimalDetails], count: int) -> tuple[ZooAnimals, dict[str, AnimalDetails]]:
    chosen = animals[:count]
    summary = ZooAnimals(animals=[AnimalSummary(id=a.id, name=a.name, species=a.species) for a in chosen])
    return summary, {a.id: a for a in chosen}


def find(animals: Sequence[AnimalDetails], animal_id: str) -> AnimalDetails:
    for animal in animals:
        if animal.id == animal_id:
            return animal
    raise AnimalNotFound(animal_id)


def like(uow: UnitOfWork, animal_id: str) -> Like:
    """Count one more like. Read-modify-write under a lock, so concurrent likes are never lost."""
    animal = uow.repository(AnimalRepository).get_for_update(animal_id)
    if animal is None:
        raise AnimalNotFound(animal_id)
    animal.likes += 1
    return Like(animal_id=animal.id, name=animal.name, likes=animal.likes)
