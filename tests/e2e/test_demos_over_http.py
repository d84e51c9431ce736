"""The demo features over real HTTP (`python -m app serve`, the session's live server), with the SDK client in
both protocol modes: what each demo answers. The server's HTTP behaviour is in test_mcp_over_http.py."""

from __future__ import annotations

import pytest
from mcp.client import Client

from tests.e2e.server import LiveServer

pytestmark = [pytest.mark.anyio, pytest.mark.demo("cafes", "search", "zoo")]
MODES = ["legacy", "auto"]


@pytest.mark.parametrize("mode", MODES)
async def test_search_ranks_the_named_function_first_in_both_modes(live_server: LiveServer, mode: str):
    async with Client(live_server.mcp_url, mode=mode) as client:
        result = await client.call_tool("search", {"q": "asyncio gather"})
    assert not result.is_error
    hits = result.structured_content["results"]
    assert hits[0]["title"] == "asyncio.gather"
    assert all(h["url"].startswith("https://docs.python.org/3/") for h in hits)


@pytest.mark.parametrize("mode", MODES)
async def test_the_zoo_widget_opens_an_animal_and_likes_it_in_both_modes(live_server: LiveServer, mode: str):
    async with Client(live_server.mcp_url, mode=mode) as client:
        details = await client.call_tool("get_zoo_animal_details", {"animal_id": "red-panda-ember"})
        first = await client.call_tool("like_zoo_animal", {"animal_id": "red-panda-ember"})
        second = await client.call_tool("like_zoo_animal", {"animal_id": "red-panda-ember"})
        unknown = await client.call_tool("like_zoo_animal", {"animal_id": "unicorn"})
    animal = details.structured_content["animal"]
    assert (animal["id"], animal["name"]) == ("red-panda-ember", "Ember")
    assert second.structured_content["likes"] == first.structured_content["likes"] + 1
    assert second.content[0].text == f"Ember now has {second.structured_content['likes']} likes."
    assert unknown.is_error is True
    assert unknown.content[0].text == "No zoo animal has the id 'unicorn'."


@pytest.mark.parametrize("mode", MODES)
async def test_a_like_shows_at_once_in_the_cached_list_and_details_of_the_worker_that_took_it(
        live_server: LiveServer, mode: str):
    async with Client(live_server.mcp_url, mode=mode) as client:
        listed = await client.call_tool("get_zoo_animals", {"count": 20})  # fills this worker's cache
        before = listed.meta["allAnimalsById"]["king-penguin-admiral"]["likes"]
        await client.call_tool("like_zoo_animal", {"animal_id": "king-penguin-admiral"})
        details = await client.call_tool("get_zoo_animal_details", {"animal_id": "king-penguin-admiral"})
        relisted = await client.call_tool("get_zoo_animals", {"count": 20})
    assert details.structured_content["animal"]["likes"] == before + 1
    assert relisted.meta["allAnimalsById"]["king-penguin-admiral"]["likes"] == before + 1


@pytest.mark.parametrize("mode", MODES)
async def test_zoo_animals_respect_count_and_carry_widget_only_details(live_server: LiveServer, mode: str):
    async with Client(live_server.mcp_url, mode=mode) as client:
        result = await client.call_tool("get_zoo_animals", {"count": 3})
    animals = result.structured_content["animals"]
    assert len(animals) == 3
    details = result.meta["allAnimalsById"]
    assert set(details) == {a["id"] for a in animals}
    assert all(d["conservation_status"] and d["habitat"] for d in details.values())


async def test_recommend_cafe_answers_in_the_requested_language_for_the_hinted_city(live_server: LiveServer):
    meta = {"openai/locale": "fr-CA", "openai/userLocation": {"city": "Lisboa", "country": "PT"}}
    async with Client(live_server.mcp_url, mode="legacy") as client:
        result = await client.call_tool("recommend_cafe", {}, meta=meta)
    assert result.structured_content["city"] == "Lisbon"
    assert result.content[0].text.startswith("Voici quelques cafés à Lisbonne qui")
    assert result.structured_content["cafes"]


async def test_recommend_cafe_gives_the_widget_each_cafes_place_and_the_maps_tiles(
        live_server: LiveServer):
    async with Client(live_server.mcp_url, mode="legacy") as client:
        result = await client.call_tool("recommend_cafe", {"city": "Vienna"})
    meta = result.meta or {}
    assert meta["map"] == {"tiles": "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
                           "attribution": "© OpenStreetMap contributors",
                           "attributionUrl": "https://www.openstreetmap.org/copyright"}
    landtmann = meta["cafesById"]["vienna-cafe-landtmann"]
    assert (landtmann["lat"], landtmann["lon"]) == (48.2115, 16.3612)
    # The model's view stays the reference page's shape: places are the widget's alone.
    assert all(set(c) == {"name", "address"} for c in result.structured_content["cafes"])
