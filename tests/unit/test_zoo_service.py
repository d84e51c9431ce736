"""Zoo use cases against a fake unit of work (no database), and the text the model reads."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from app.features.zoo import service
from app.features.zoo.repository import AnimalRepository
from app.features.zoo.schemas import AnimalSummary, ZooAnimals
from app.features.zoo.tool import animals_result
from tests.fakes import FakeUnitOfWork

pytestmark = pytest.mark.demo("zoo")


@dataclass
class _Animal:
    id: str
    name: str
    likes: int = 0


class FakeAnimals:
    def __init__(self, *animals: _Animal) -> None:
        self.rows = {a.id: a for a in animals}
        self.locked: list[str] = []

    def get_for_update(self, animal_id: str) -> _Animal | None:
        self.locked.append(animal_id)
        return self.rows.get(animal_id)


def test_a_like_locks_the_row_counts_once_and_leaves_the_commit_to_the_caller():
    animals = FakeAnimals(_Animal("a1", "Ada", likes=4))
    with FakeUnitOfWork({AnimalRepository: animals}) as uow:
        like = service.like(uow, "a1")
    assert (like.animal_id, like.name, like.likes) == ("a1", "Ada", 5)
    assert animals.locked == ["a1"]
    assert uow.committed is False and uow.rolled_back is True


def test_liking_an_unknown_animal_is_a_lookup_error():
    with FakeUnitOfWork({AnimalRepository: FakeAnimals()}) as uow, pytest.raises(service.AnimalNotFound):
        service.like(uow, "unicorn")


def test_the_zoo_says_one_animal_not_one_animals():
    one = ZooAnimals(animals=[AnimalSummary(id="a", name="Ada", species="Red panda")])
    two = ZooAnimals(animals=[*one.animals, AnimalSummary(id="b", name="Bo", species="Otter")])
    assert animals_result(one, {}, {}).content[0].text == "1 animal at the zoo: Ada the red panda."
    assert (animals_result(two, {}, {}).content[0].text
            == "2 animals at the zoo: Ada the red panda, Bo the otter.")
    assert animals_result(ZooAnimals(animals=[]), {}, {}).content[0].text == "The zoo is empty."


def test_the_transcript_names_the_species_in_english_whatever_the_widget_shows():
    shown = ZooAnimals(animals=[AnimalSummary(id="a", name="Ada", species="Panda roux")])
    result = animals_result(shown, {}, {"a": "Red panda"}, "fr")
    assert result.content[0].text == "1 animal at the zoo: Ada the red panda."
    assert result.structured_content == {
        "animals": [{"id": "a", "name": "Ada", "species": "Panda roux"}]}
    assert result.meta == {"allAnimalsById": {}, "locale": "fr"}
