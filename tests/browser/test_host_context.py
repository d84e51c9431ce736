"""Host context changes (theme, locale) reach a mounted widget and change what it shows."""

from __future__ import annotations

import pytest

from tests.browser.host import Host, expect

pytestmark = pytest.mark.demo("cafes", "zoo")

# The widget's <main> has no background of its own (transparent in both themes): the page behind it is
# <body>'s, and <main>'s text colour follows the theme.
COLOURS = """() => ({
  background: getComputedStyle(document.body).backgroundColor,
  mainColor: getComputedStyle(document.querySelector('main')).color,
})"""


def test_theme_switch_changes_the_rendering(host: Host) -> None:
    host.call("get_zoo_animals", {"count": 2})
    host.expect_state("zoo", "ready")
    html = host.frame.locator("html")

    host.set_theme("light")
    expect(html).to_have_attribute("data-theme", "light")
    light = host.frame_object().evaluate(COLOURS)

    host.set_theme("dark")
    expect(html).to_have_attribute("data-theme", "dark")
    dark = host.frame_object().evaluate(COLOURS)

    assert light["background"] != dark["background"], (light, dark)
    assert light["mainColor"] != dark["mainColor"], (light, dark)

    host.set_theme("light")
    expect(html).to_have_attribute("data-theme", "light")
    assert host.frame_object().evaluate(COLOURS) == light


def test_locale_switch_translates_the_cafes_heading(host: Host) -> None:
    result = host.call("recommend_cafe", {})
    city = result["structuredContent"]["city"]
    heading = host.by_testid("cafes-heading")
    expect(heading).to_have_text(f"Cafés in {city}")

    host.set_locale("fr-FR")
    expect(heading).to_have_text(f"Cafés à {city}")
    expect(host.by_testid("cafe-map").first).to_have_text("Ouvrir la carte")
    expect(host.frame.locator("html")).to_have_attribute("lang", "fr-FR")


def test_a_locale_written_with_an_underscore_is_understood_and_breaks_nothing(host: Host) -> None:
    # Some hosts send POSIX-style tags ("pt_BR"): Intl throws on them, so the bridge canonicalises.
    result = host.call("recommend_cafe", {})
    city = result["structuredContent"]["city"]
    host.set_locale("pt_BR")
    expect(host.frame.locator("html")).to_have_attribute("lang", "pt-BR")
    expect(host.by_testid("cafes-heading")).to_have_text(f"Cafés em {city}")
