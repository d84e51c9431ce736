"""The cafés' map in the strict host: one pin per café at its own point, drawn over tiles from the
loopback tile server (tests/browser/tiles.py) that the widget's CSP declares; the map and the list
move together; the attribution opens through the host; and with no tile reachable the list stays,
with a line saying the map could not be shown."""

from __future__ import annotations

import itertools
import math
import re

import pytest

from tests.browser.host import Host, expect
from tests.browser.tiles import TileServer

pytestmark = pytest.mark.demo("cafes")


def _pin_centres(host: Host) -> dict[str, tuple[float, float]]:
    centres = {}
    for pin in host.by_testid("cafe-pin").all():
        box = pin.bounding_box()
        assert box is not None
        centres[pin.get_attribute("data-pin-for") or ""] = (box["x"] + box["width"] / 2,
                                                            box["y"] + box["height"] / 2)
    return centres


def test_each_cafe_has_a_pin_at_its_own_point_over_the_stubbed_tiles(host: Host,
                                                                       tiles: TileServer) -> None:
    found = host.call("recommend_cafe", {"city": "Vienna"})
    host.expect_state("cafes", "ready")
    details = found["_meta"]["cafesById"]
    assert found["_meta"]["map"]["tiles"] == tiles.template
    expect(host.by_testid("cafe-pin")).to_have_count(len(found["structuredContent"]["cafes"]))
    # Tiles drew from the loopback server: images that loaded, not broken ones.
    host.frame.locator("img.leaflet-tile-loaded").first.wait_for()
    assert any(path.endswith(".png") for path in tiles.paths)
    natural = host.frame.locator("img.leaflet-tile-loaded").first.evaluate("(i) => i.naturalWidth")
    assert natural == 256

    centres = _pin_centres(host)
    cards = host.by_testid("cafe-card").evaluate_all("(cs) => cs.map((c) => c.dataset.cafeId)")
    assert set(centres) == set(cards) == set(details)
    for (a, pa), (b, pb) in itertools.combinations(centres.items(), 2):
        assert math.dist(pa, pb) >= 28, (a, b, pa, pb)  # a pin's width: none covers another
    # Where they are follows the coordinates: north is up, east is right.
    by_lat = sorted(centres, key=lambda i: details[i]["lat"])
    assert [centres[i][1] for i in by_lat] == sorted((centres[i][1] for i in by_lat), reverse=True)
    by_lon = sorted(centres, key=lambda i: details[i]["lon"])
    assert [centres[i][0] for i in by_lon] == sorted(centres[i][0] for i in by_lon)
    # Each pin is named for a screen reader, with the number its card shows.
    first = host.by_testid("cafe-card").first
    pin = host.frame.locator(f'[data-testid=cafe-pin][data-pin-for="{cards[0]}"]')
    expect(pin).to_have_attribute("aria-label", f"1. {first.get_attribute('data-cafe-name')}")


def test_cafes_across_a_street_get_pins_that_do_not_cover_each_other(host: Host,
                                                                    tiles: TileServer) -> None:
    """Café de Flore and Les Deux Magots are 50 m apart: one point at the zoom that shows Paris's
    four, so their pins are set around it, each still whole, in step through a zoom."""
    found = host.call("recommend_cafe", {"city": "Paris"})
    host.expect_state("cafes", "ready")
    assert {"paris-cafe-de-flore", "paris-les-deux-magots"} <= set(found["_meta"]["cafesById"])
    for _step in range(2):
        expect(host.by_testid("cafe-pin")).to_have_count(4)
        centres = _pin_centres(host)
        for (a, pa), (b, pb) in itertools.combinations(centres.items(), 2):
            assert math.dist(pa, pb) >= 28, (a, b, pa, pb)
        zoom = _zoom(host)
        host.frame.get_by_role("button", name="Zoom in").click()
        host.frame.locator(f".leaflet-tile-container img[src*='/{zoom + 1}/']").first.wait_for()
        expect(host.frame.locator(".leaflet-zoom-anim")).to_have_count(0)


def _zoom(host: Host) -> int:
    """The map's zoom, read from the tiles it shows (/<z>/<x>/<y>.png)."""
    src = host.frame.locator(".leaflet-tile-loaded").first.get_attribute("src") or ""
    found = re.search(r"/(\d+)/\d+/\d+\.png$", src)
    assert found is not None, src
    return int(found[1])


def test_a_pin_picks_its_card_and_a_cards_select_lights_its_pin(host: Host,
                                                                tiles: TileServer) -> None:
    host.call("recommend_cafe", {"city": "Vienna"})
    host.expect_state("cafes", "ready")
    # Full screen: the map beside a list taller than the frame, which scrolls to the card picked.
    host.page.evaluate("() => window.hostEmulator.setDisplayMode('fullscreen')")
    cards = host.by_testid("cafe-card")
    last = cards.last
    expect(last).not_to_be_in_viewport(ratio=0.99)
    last_id = last.get_attribute("data-cafe-id")
    host.frame.locator(f'[data-testid=cafe-pin][data-pin-for="{last_id}"]').click()
    expect(last).to_have_class("card c-card is-selected")
    expect(last.get_by_test_id("cafe-select")).to_have_attribute("aria-pressed", "true")
    [told] = host.page.evaluate("() => window.hostEmulator.attachments()")
    assert told["title"] == last.get_attribute("data-cafe-name")
    expect(last).to_be_in_viewport(ratio=0.99)  # the card a pin picked is brought into view

    first = cards.first
    first.get_by_test_id("cafe-select").click()
    first_id = first.get_attribute("data-cafe-id")
    first_pin = host.frame.locator(f'[data-testid=cafe-pin][data-pin-for="{first_id}"]')
    expect(first_pin).to_have_attribute("aria-pressed", "true")
    expect(first_pin).to_have_class(re.compile(r"\bis-selected\b"))
    last_pin = host.frame.locator(f'[data-testid=cafe-pin][data-pin-for="{last_id}"]')
    expect(last_pin).to_have_attribute("aria-pressed", "false")
    # A pin is reached from the keyboard too: Enter on it picks its café.
    last_pin.focus()
    last_pin.press("Enter")
    expect(last_pin).to_have_attribute("aria-pressed", "true")


def test_the_attribution_is_shown_and_opens_through_the_host(host: Host, tiles: TileServer) -> None:
    host.call("recommend_cafe", {"city": "Porto"})
    host.expect_state("cafes", "ready")
    credit = host.by_testid("map-attribution")
    expect(credit).to_have_text("© OpenStreetMap contributors")
    credit.get_by_role("button").click()
    host.wait_for_record("links", "(l) => l.url === 'https://www.openstreetmap.org/copyright'")


def test_with_no_tile_reachable_the_list_stays_and_says_the_map_is_missing(
        host: Host, tiles: TileServer) -> None:
    tiles.failing = True
    found = host.call("recommend_cafe", {"city": "Lisbon"})
    host.expect_state("cafes", "ready")
    expect(host.by_testid("map-unavailable")).to_have_text(
        "The map could not be loaded; every café is listed below.")
    expect(host.by_testid("cafe-map-view")).to_have_count(0)
    expect(host.by_testid("cafe-card")).to_have_count(len(found["structuredContent"]["cafes"]))
    expect(host.by_testid("cafe-address").first).to_be_visible()
    assert host.page_errors == []
