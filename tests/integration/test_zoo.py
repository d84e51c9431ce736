"""The zoo against the migrated and seeded database (SQLite or PostgreSQL)."""

from __future__ import annotations

import pytest

from app.db import Database
from app.db.migrate import upgrade
from app.features.zoo import service as zoo
from app.features.zoo.repository import AnimalRepository
from app.main import discover_features
from app.parts import seed
from app.settings import load_settings
from tests.conftest import count_rows

pytestmark = pytest.mark.demo("zoo")


def test_the_zoo_lists_distinct_real_species_with_conservation_facts(db):
    summary, details = db.read_sync(lambda uow: zoo.list_animals(uow, 20))
    assert len(summary.animals) == 20
    assert len({a.species for a in summary.animals}) == 20
    statuses = {d.conservation_status for d in details.values()}
    assert statuses <= {"Least Concern", "Near Threatened", "Vulnerable", "Endangered", "Critically Endangered",
                        "Extinct in the Wild"}
    assert len(statuses) > 2


def test_every_animal_is_listed_by_name_for_the_tools_cache(db):
    animals = db.read_sync(zoo.all_animals)
    assert len(animals) == 30
    assert [a.name for a in animals] == sorted(a.name for a in animals)
    assert zoo.listing(animals, 3)[0].animals == db.read_sync(lambda uow: zoo.list_animals(uow, 3))[0].animals


def test_count_limits_the_list_and_details_match_it(db):
    summary, details = db.read_sync(lambda uow: zoo.list_animals(uow, 1))
    assert [a.id for a in summary.animals] == list(details)


def test_an_unknown_animal_id_is_a_clear_lookup_error(db):
    with pytest.raises(zoo.AnimalNotFound):
        zoo.find(db.read_sync(zoo.all_animals), "unicorn")


def test_seeding_again_restores_the_data_file_and_keeps_what_users_did(fresh_database):
    upgrade(fresh_database)
    db = Database(fresh_database)
    features = discover_features()
    try:
        seed(db, features, load_settings(database_url=fresh_database))
        db.write_sync(lambda uow: zoo.like(uow, "king-penguin-admiral"))
        db.write_sync(lambda uow: setattr(uow.repository(AnimalRepository).get("king-penguin-admiral"),
                                          "species", "Edited species"))
        seed(db, features, load_settings(database_url=fresh_database))
        animal = zoo.find(db.read_sync(zoo.all_animals), "king-penguin-admiral")
    finally:
        db.dispose()
    assert animal.likes == 1  # a user's like survives a re-seed
    assert animal.species == "King penguin"  # seed data is what the data file says
    assert count_rows(fresh_database, "zoo_animals") == 30


def _call(client, name: str, arguments: dict) -> dict:
    response = client.post("/mcp", headers={"accept": "application/json", "mcp-protocol-version": "2025-06-18"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                 "params": {"name": name, "arguments": arguments}})
    return response.json()["result"]


def test_with_a_long_cache_ttl_a_like_still_shows_at_once_in_the_worker_that_took_it(settings, db):
    from starlette.testclient import TestClient

    from app.main import create_app

    zoo_feature = next(f for f in discover_features() if f.name == "zoo")
    app = create_app(settings.model_copy(update={"cache_ttl": 300.0}), db=db, features=[zoo_feature])
    with TestClient(app, base_url=settings.base_url) as client:
        listed = _call(client, "get_zoo_animals", {"count": 20})
        animal_id = listed["structuredContent"]["animals"][0]["id"]
        before = listed["_meta"]["allAnimalsById"][animal_id]["likes"]
        assert _call(client, "like_zoo_animal", {"animal_id": animal_id})["structuredContent"]["likes"] == before + 1
        details = _call(client, "get_zoo_animal_details", {"animal_id": animal_id})
        relisted = _call(client, "get_zoo_animals", {"count": 20})
    assert details["structuredContent"]["animal"]["likes"] == before + 1
    assert relisted["_meta"]["allAnimalsById"][animal_id]["likes"] == before + 1
