"""One screenshot per widget, display mode and theme, written to tests/browser/artifacts/ (CI
keeps the folder): what each widget looks like to a person, inline and full screen, light and
dark, as the host emulator shows it, and in French and Chinese. Each view is also checked: the
widget reaches its ready state, and axe-core finds no violation of WCAG 2.1 A or AA in it, of any
impact."""

from __future__ import annotations

import json
import uuid
from importlib.resources import files

import pytest

from tests.browser.accessibility import violations
from tests.browser.host import Host, artifacts_dir, expect

pytestmark = [pytest.mark.demo("zoo", "cafes", "search", "recipes", "files"),
              pytest.mark.authserver]
MODES = ("inline", "fullscreen")
THEMES = ("light", "dark")


def _show(host: Host, widget: str, file_host, fresh_account) -> None:
    if widget == "zoo":
        host.call("get_zoo_animals", {"count": 6})
    elif widget == "cafes":
        host.call("recommend_cafe", {"city": "Paris"})
    elif widget == "search":
        host.call("search", {"q": "pathlib"})
    elif widget == "recipes":
        host.sign_in(*fresh_account)
        host.call("save_recipe", {"title": "Lemon tart", "source_url": "https://example.org/tart"})
        host.call("save_recipe", {"title": "Lentil soup"})
    else:
        rows = "".join(f"{i},{(i * 7) % 50},{'north' if i % 3 else 'south'}\n" for i in range(200))
        url = file_host.offer(("day,height,side\n" + rows).encode(), "text/csv", name="tides.csv")
        host.call("analyze_file", {"file": {"download_url": url, "file_name": "tides.csv",
                                            "file_id": f"file_{uuid.uuid4().hex}"}})


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("widget", ["zoo", "cafes", "search", "recipes", "files"])
def test_a_screenshot_of_each_widget_in_each_mode(host: Host, widget: str, theme: str, file_host,
                                                 fresh_account) -> None:
    host.set_theme(theme)
    _show(host, widget, file_host, fresh_account)
    host.expect_state(widget, "ready", timeout=30_000)
    frame = host.page.locator("iframe[data-testid=widget-frame]")
    for mode in MODES:
        host.page.evaluate("(m) => window.hostEmulator.setDisplayMode(m)", mode)
        expect(host.page.locator("#frame-box")).to_have_attribute("data-display-mode", mode)
        host.page.wait_for_timeout(300)  # the frame's new height
        path = artifacts_dir() / f"widget-{widget}-{mode}-{theme}.png"
        frame.screenshot(path=str(path))
        assert path.stat().st_size > 2_000, path  # a picture, not an empty frame
        # And what a person with a screen reader or low vision meets there (axe-core, WCAG 2.1 AA).
        assert violations(host.frame_object()) == [], (widget, mode, theme)


@pytest.mark.parametrize("theme", THEMES)
def test_the_views_behind_a_tap_have_no_accessibility_violation(
        host: Host, theme: str, fresh_account) -> None:
    """An animal's page, the files library, a selected café: a screenshot and axe-core each."""
    host.set_theme(theme)
    host.call("get_zoo_animals", {"count": 3})
    host.expect_state("zoo", "ready")
    host.by_testid("animal-card").first.click()
    expect(host.by_testid("animal-details")).to_be_visible()
    expect(host.by_testid("animal-name")).not_to_be_empty()
    host.page.locator("iframe[data-testid=widget-frame]").screenshot(
        path=str(artifacts_dir() / f"widget-zoo-animal-{theme}.png"))
    assert violations(host.frame_object()) == [], ("zoo animal", theme)

    host.call("recommend_cafe", {"city": "Lisbon"})
    host.expect_state("cafes", "ready")
    host.by_testid("cafe-select").first.click()
    expect(host.by_testid("cafe-select").first).to_have_attribute("aria-pressed", "true")
    assert violations(host.frame_object()) == [], ("café selected", theme)

    host.sign_in(*fresh_account)
    host.call("list_files", {})
    host.expect_state("files", "empty", timeout=15_000)
    host.page.locator("iframe[data-testid=widget-frame]").screenshot(
        path=str(artifacts_dir() / f"widget-files-library-{theme}.png"))
    assert violations(host.frame_object()) == [], ("files library", theme)


@pytest.mark.parametrize("theme", THEMES)
def test_the_other_views_a_result_comes_to_have_no_accessibility_violation(
        host: Host, theme: str, file_host, tiles) -> None:
    """The cafés' map full screen, two files compared, a search that found nothing, a failure:
    a screenshot and axe-core each."""
    host.set_theme(theme)
    frame = host.page.locator("iframe[data-testid=widget-frame]")
    found: dict[str, list[str]] = {}

    host.call("recommend_cafe", {"city": "Vienna"})
    host.expect_state("cafes", "ready")
    host.page.evaluate("() => window.hostEmulator.setDisplayMode('fullscreen')")
    host.frame.locator("img.leaflet-tile-loaded").first.wait_for()
    frame.screenshot(path=str(artifacts_dir() / f"widget-cafes-map-{theme}.png"))
    found["cafés map"] = violations(host.frame_object())

    offered = [(f"{side}.csv", "day,height\n" + "".join(f"{i},{i % 9 + shift}\n"
                                                       for i in range(60)))
               for side, shift in (("before", 0), ("after", 30))]
    host.call("compare_files", {"files": [
        {"download_url": file_host.offer(body.encode(), "text/csv", name=name),
         "file_id": f"file_{uuid.uuid4().hex}", "file_name": name} for name, body in offered]})
    host.expect_state("files", "ready", timeout=30_000)
    frame.screenshot(path=str(artifacts_dir() / f"widget-files-comparison-{theme}.png"))
    found["files compared"] = violations(host.frame_object())

    host.call("search", {"q": "zzqxvkwj"})
    host.expect_state("search", "empty")
    found["search, nothing found"] = violations(host.frame_object())

    host.call("analyze_file", {"file": {"download_url": f"{file_host.origin}/gone",
                                        "file_name": "gone.csv", "file_id": "file_gone"}})
    host.expect_state("files", "error")
    frame.screenshot(path=str(artifacts_dir() / f"widget-files-error-{theme}.png"))
    found["a failure"] = violations(host.frame_object())
    assert found == {view: [] for view in found}


# The languages beside English each widget is shown in (tests/browser/test_languages.py reads
# the zoo's and the cafés' data in them).
LOCALES = {"fr-FR": "fr", "zh-CN": "zh"}


@pytest.mark.parametrize("locale", LOCALES)
def test_a_failure_reads_in_the_persons_language(host: Host, locale: str, file_host) -> None:
    """What went wrong, in the person's words (app/features/files/wording.json); the advice for the
    model stays out of the widget."""
    english = "The file's server answered HTTP {status}; the download link may have expired."
    catalogue = json.loads((files("app.features.files") / "wording.json").read_text("utf-8"))
    said = catalogue[english][LOCALES[locale]].format(status=404)
    host.set_locale(locale)
    result = host.call("analyze_file", {"file": {
        "download_url": f"{file_host.origin}/gone", "file_name": "gone.csv",
        "file_id": "file_gone"}})
    assert result["isError"] is True
    shown = host.by_testid("error")
    expect(shown).to_have_text(said)
    assert said != english.format(status=404)
    expect(shown).not_to_contain_text("Ask the user")


@pytest.mark.parametrize("widget", ["search", "recipes", "files"])
def test_the_other_widgets_speak_each_language(host: Host, widget: str, file_host,
                                               fresh_account) -> None:
    """Their words in each language (their data is the person's own, or the corpus's: search's
    titles stay as the documents write them, docs/widgets.md), and a screenshot of each."""
    _show(host, widget, file_host, fresh_account)
    host.expect_state(widget, "ready", timeout=30_000)
    heading = host.frame.locator("header.w-head h1")
    english = heading.inner_text()
    for locale, language in LOCALES.items():
        host.set_locale(locale)
        expect(host.frame.locator("html")).to_have_attribute("lang", locale)
        assert heading.inner_text() != english, (widget, locale)
        if widget == "files":  # the model's English summary gives way to the facts in words
            expect(host.by_testid("summary")).to_have_count(0)
        host.page.locator("iframe[data-testid=widget-frame]").screenshot(
            path=str(artifacts_dir() / f"widget-{widget}-{language}.png"))
