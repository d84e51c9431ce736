"""The cafés' places and the map's settings: every café has coordinates inside its city (checked
against bounding boxes written down here, independently of the data), no two share a point, the
data's notice names where they come from; the tile template is refused in one line unless the
widget's CSP can declare its one origin, and the widget declares exactly that origin."""

from __future__ import annotations

import itertools
import json
from importlib.resources import files

import pytest

from app.features.cafes.settings import CafesMapSettings
from app.features.cafes.tool import cafe_widget, map_meta
from app.settings import SettingsError, load_part

pytestmark = pytest.mark.demo("cafes")

DATA = files("app.features.cafes") / "data"
# (south, west, north, east) of each city's administrative area, rounded outwards to 0.01°.
BOUNDS = {
    "paris": (48.81, 2.22, 48.91, 2.47),
    "madrid": (40.31, -3.89, 40.65, -3.51),
    "barcelona": (41.31, 2.05, 41.47, 2.23),
    "lisbon": (38.69, -9.24, 38.80, -9.08),
    "porto": (41.13, -8.70, 41.19, -8.55),
    "sao-paulo": (-24.01, -46.83, -23.35, -46.36),
    "rio-de-janeiro": (-23.09, -43.80, -22.74, -43.09),
    "mexico-city": (19.04, -99.37, 19.60, -98.94),
    "shanghai": (30.67, 120.85, 31.88, 122.20),
    "vienna": (48.11, 16.18, 48.33, 16.58),
    "new-york": (40.47, -74.26, 40.92, -73.70),
    "london": (51.28, -0.52, 51.70, 0.34),
    "san-francisco": (37.70, -122.52, 37.84, -122.35),
}


def _cities() -> list[dict]:
    return json.loads((DATA / "cafes.json").read_text(encoding="utf-8"))["cities"]


def test_every_cafe_lies_inside_its_citys_bounding_box() -> None:
    cities = _cities()
    assert {c["key"] for c in cities} == set(BOUNDS)
    for city in cities:
        south, west, north, east = BOUNDS[city["key"]]
        for cafe in city["cafes"]:
            assert south <= cafe["lat"] <= north and west <= cafe["lon"] <= east, cafe["id"]


def test_no_two_cafes_share_a_point() -> None:
    places = [(c["id"], (c["lat"], c["lon"])) for city in _cities() for c in city["cafes"]]
    assert len(places) == len(dict(places)) >= 40  # each café once
    for (a, pa), (b, pb) in itertools.combinations(places, 2):
        assert pa != pb, (a, b)


def test_the_notice_names_the_source_of_the_coordinates_and_of_the_tiles() -> None:
    notice = (DATA / "NOTICE.txt").read_text(encoding="utf-8")
    assert "Typed by hand by the project's maintainers from each café's street address" in notice
    assert "© OpenStreetMap contributors" in notice and "Open Database License" in notice


@pytest.mark.parametrize("tiles", [
    "https://{s}.tile.example.org/{z}/{x}/{y}.png",  # subdomains: no wildcard in a CSP
    "https://tile.example.org/{z}/{x}.png",
    "https://tile.example.org/{z}/{x}/{y}.png?key={key}",
    "http://tile.example.org/{z}/{x}/{y}.png",  # http only on loopback
    "ftp://tile.example.org/{z}/{x}/{y}.png",
    "tile.example.org/{z}/{x}/{y}.png",
    "https://evil.example\\.tile.example.org/{z}/{x}/{y}.png",  # a browser goes to evil.example
])
def test_a_tile_template_the_csp_cannot_declare_is_refused_in_one_line(tiles: str) -> None:
    with pytest.raises(SettingsError) as refused:
        load_part(CafesMapSettings, map_tiles=tiles)
    assert str(refused.value).splitlines() == [
        "APP_CAFES_MAP_TILES: must be an https URL with {z}, {x} and {y} and no other placeholder "
        f"(http only on loopback), or empty for no map (got {tiles!r})"]


def test_the_widget_declares_the_tiles_origin_and_the_attributions_page() -> None:
    settings = load_part(CafesMapSettings, map_tiles="https://maps.example.com:8443/t/{z}/{x}/{y}.png",
                         map_attribution_url="https://maps.example.com:8443/licence")
    widget = cafe_widget(settings)
    assert widget.resource_domains == ("https://maps.example.com:8443",)
    assert widget.redirect_domains == ("https://www.openstreetmap.org",
                                       "https://maps.example.com:8443")
    meta = widget.resource_meta("https://w.example.com")
    assert meta["ui"]["csp"]["resourceDomains"] == ["https://maps.example.com:8443"]
    assert meta["openai/widgetCSP"]["resource_domains"] == ["https://maps.example.com:8443"]
    assert map_meta(settings) == {"tiles": "https://maps.example.com:8443/t/{z}/{x}/{y}.png",
                                  "attribution": "© OpenStreetMap contributors",
                                  "attributionUrl": "https://maps.example.com:8443/licence"}


def test_with_no_tiles_the_widget_declares_no_origin_and_gets_no_map() -> None:
    settings = load_part(CafesMapSettings, map_tiles="")
    assert cafe_widget(settings).resource_domains == ()
    assert map_meta(settings) is None


def test_an_attribution_link_that_is_not_https_is_refused() -> None:
    refused = r"^APP_CAFES_MAP_ATTRIBUTION_URL: must be an https URL"
    with pytest.raises(SettingsError, match=refused):
        load_part(CafesMapSettings, map_attribution_url="javascript:alert(1)")
