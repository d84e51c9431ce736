"""Zoo and café services against the migrated database (SQLite or PostgreSQL)."""

from __future__ import annotations

import pytest

from app.features.cafes import service as cafes
from app.features.zoo import service as zoo


def test_the_zoo_lists_distinct_real_species_with_conservation_facts(db):
    summary, details = db.read_sync(lambda uow: zoo.list_animals(uow, 20))
    assert len(summary.animals) == 20
    assert len({a.species for a in summary.animals}) == 20
    statuses = {d.conservation_status for d in details.values()}
    assert statuses <= {"Least Concern", "Near Threatened", "Vulnerable", "Endangered", "Critically Endangered",
                        "Extinct in the Wild"}
    assert len(statuses) > 2


def test_count_limits_the_list_and_details_match_it(db):
    summary, details = db.read_sync(lambda uow: zoo.list_animals(uow, 1))
    assert [a.id for a in summary.animals] == list(details)


def test_an_unknown_animal_id_is_a_clear_lookup_error(db):
    with pytest.raises(zoo.AnimalNotFound):
        db.read_sync(lambda uow: zoo.animal_details(uow, "unicorn"))


@pytest.mark.parametrize(
    ("language", "locale", "city", "expected_city", "intro_start"),
    [
        ("fr", "fr-FR", "Lisboa", "Lisbon", "Voici quelques cafés à Lisbonne qui"),
        ("es", "es-MX", "Ciudad de México", "Mexico City", "Aquí tienes algunas cafeterías en Ciudad de México"),
        ("zh", "zh-CN", "上海", "Shanghai", "以下是上海一些"),
        ("zh", "zh-CN", "Lisbon", "Lisbon", "以下是里斯本一些"),
        ("pt", "pt-BR", "New York", "New York", "Aqui estão alguns cafés em Nova York"),
        ("pt", "pt-BR", None, "São Paulo", "Aqui estão alguns cafés muito queridos em São Paulo"),
        ("en", None, None, "New York", "Here are some well-loved cafés in New York"),
        ("en", "en-GB", "Atlantis", "London", "I don't know cafés in Atlantis yet"),
        ("en", "en-US", "  SAN   FRANCISCO ", "San Francisco", "Here are some cafés in San Francisco"),
    ],
)
def test_cafes_follow_the_city_hint_then_the_locale(db, language, locale, city, expected_city, intro_start):
    rec = db.read_sync(lambda uow: cafes.recommend(uow, language, locale, city))
    assert rec.output.city == expected_city
    assert rec.intro.startswith(intro_start)
    assert 1 <= len(rec.output.cafes) <= cafes.MAX_CAFES
    assert all(c.name and c.address for c in rec.output.cafes)
    assert set(rec.details) and all(d["address"] for d in rec.details.values())


def test_a_city_named_in_one_language_is_found_from_another(db):
    rec = db.read_sync(lambda uow: cafes.recommend(uow, "en", "en-US", "Lisbonne"))
    assert rec.output.city == "Lisbon" and rec.intro.startswith("Here are some cafés in Lisbon")


def test_city_names_are_matched_without_case_accents_or_punctuation():
    assert cafes.normalize_city("São  Paulo") == "sao paulo"
    assert cafes.normalize_city("New-York.") == "new york"
