"""The text the model reads: counts agree with their nouns."""

from __future__ import annotations

from app.features.search.schemas import SearchHit, SearchResults
from app.features.search.tool import search_result
from app.features.zoo.schemas import AnimalSummary, ZooAnimals
from app.features.zoo.tool import animals_result


def _hits(n: int) -> SearchResults:
    return SearchResults(results=[SearchHit(id=f"d{i}", title=f"T{i}", url=f"https://docs.python.org/3/{i}",
                                            snippet="s", score=1.0) for i in range(n)])


def test_search_says_top_result_for_one_hit_and_top_n_results_for_more():
    assert search_result("q", _hits(1)).content[0].text == "Top result for 'q':\n1. T0 — https://docs.python.org/3/0"
    assert search_result("q", _hits(2)).content[0].text.startswith("Top 2 results for 'q':\n1. T0")
    assert search_result("q", _hits(0)).content[0].text == "No documentation matches 'q'."


def test_the_zoo_says_one_animal_not_one_animals():
    one = ZooAnimals(animals=[AnimalSummary(id="a", name="Ada", species="Red panda")])
    two = ZooAnimals(animals=[*one.animals, AnimalSummary(id="b", name="Bo", species="Otter")])
    assert animals_result(one, {}).content[0].text == "1 animal at the zoo: Ada the red panda."
    assert animals_result(two, {}).content[0].text == "2 animals at the zoo: Ada the red panda, Bo the otter."
    assert animals_result(ZooAnimals(animals=[]), {}).content[0].text == "The zoo is empty."
