"""What the widgets show beyond the bare result: search marks why each result matched and puts a
module's own page first; a saved recipe shows its link and opens it through the host."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.host import Host, expect

pytestmark = [pytest.mark.demo("search", "recipes", "files", "zoo"), pytest.mark.authserver]


def test_search_puts_the_module_first_and_marks_the_matched_words(host: Host) -> None:
    result = host.call("search", {"q": "pathlib"})
    assert result["structuredContent"]["results"][0]["id"] == "py:pathlib"
    host.expect_state("search", "ready")
    first = host.by_testid("search-result").first
    expect(first).to_have_attribute("data-result-id", "py:pathlib")
    marks = first.get_by_test_id("search-hit")
    expect(marks.first).to_have_text("pathlib")
    for snippet in host.by_testid("search-result-snippet").all_text_contents():
        assert "``" not in snippet and ":class:`" not in snippet, snippet


def test_a_saved_recipes_link_shows_and_opens_through_the_host(host: Host, fresh_account) -> None:
    host.sign_in(*fresh_account)
    title = f"Linked tart {uuid.uuid4().hex[:6]}"
    link = "https://recipes.example.org/tarts/lemon"
    host.call("save_recipe", {"title": title, "source_url": link})
    listed = host.call("list_saved_recipes", {})
    [(rid, url)] = listed["_meta"]["linksById"].items()
    assert url == link and listed["structuredContent"]["recipes"][0] == {"id": rid, "title": title}
    host.expect_state("recipes", "ready")
    shown = host.by_testid("recipe-link")
    expect(shown).to_have_text("recipes.example.org/tarts/lemon")
    shown.click()
    host.wait_for_record("links", f"(l) => l.url === {link!r}")
    [opened] = host.record("links")
    assert opened == {"via": "ui/open-link", "url": link}


def test_a_request_a_widget_makes_to_an_undeclared_origin_is_caught(host: Host,
                                                                   browser_server) -> None:
    """The after-test check sees requests from inside a widget's frame: one to an origin no
    widget declares is listed (the check itself, tried on a request made on purpose)."""
    from tests.browser.conftest import undeclared_requests, widget_origins

    host.call("search", {"q": "json"})
    host.expect_state("search", "ready")
    stray = "http://127.0.0.1:9/not-declared.png"
    host.frame_object().evaluate("(u) => fetch(u).catch(() => null)", stray)
    host.page.wait_for_timeout(300)
    assert stray in host.widget_requests
    assert undeclared_requests(host.widget_requests, widget_origins(browser_server)) == [stray]
    host.widget_requests.clear()  # caught: this test made it on purpose


def test_the_widgets_take_the_hosts_look_when_it_sends_one(host: Host) -> None:
    """MCP Apps `styles.variables` (ChatGPT's fonts, colours, radii) over the widget's defaults;
    without them, the widget's own theme."""
    host.call("get_zoo_animals", {"count": 2})
    host.expect_state("zoo", "ready")
    frame = host.frame_object()
    background = "() => getComputedStyle(document.body).backgroundColor"
    assert frame.evaluate(background) == "rgb(255, 255, 255)"  # the widget's own light theme
    host.page.evaluate("""() => window.hostEmulator.setHostStyles({
        "--color-background-primary": "rgb(250, 245, 235)",
        "--color-text-primary": "rgb(40, 30, 20)",
        "--border-radius-lg": "3px",
        "--font-sans": "Georgia, serif"})""")
    frame.wait_for_function("() => getComputedStyle(document.body).backgroundColor"
                            " === 'rgb(250, 245, 235)'")
    assert frame.evaluate("() => getComputedStyle(document.body).color") == "rgb(40, 30, 20)"
    assert "Georgia" in frame.evaluate("() => getComputedStyle(document.body).fontFamily")
    radius = frame.evaluate("() => getComputedStyle(document.querySelector('.card'))"
                            ".borderTopLeftRadius")
    assert radius == "3px"
    host.page.evaluate("() => window.hostEmulator.setHostStyles(null)")


def test_a_numeric_csv_is_drawn_as_histograms_with_words_beside_them(host: Host,
                                                                     file_host) -> None:
    rows = "".join(f"{i},{(i * 7) % 50},{'north' if i % 3 else 'south'},2024-{1 + i % 12:02d}-15\n"
                   for i in range(1, 301))
    url = file_host.offer(("day,height,side,read_on\n" + rows).encode(), "text/csv",
                          name="tides.csv")
    host.call("analyze_file", {"file": {"download_url": url, "file_id": f"file_{uuid.uuid4().hex}",
                                        "file_name": "tides.csv"}})
    host.expect_state("files", "ready", timeout=30_000)
    charts = host.by_testid("csv-chart")
    expect(charts).to_have_count(4)
    over_time = host.frame.locator("[data-testid=csv-chart][data-column=read_on]")
    expect(over_time).to_have_attribute("data-kind", "timeline")
    expect(over_time.locator("svg[role=img] polyline")).to_have_count(1)
    expect(over_time.get_by_test_id("chart-text")).to_contain_text(
        "read_on: from 2024-01-15 to 2024-12-15; the most rows (")
    height = host.frame.locator("[data-testid=csv-chart][data-column=height]")
    expect(height).to_have_attribute("data-kind", "histogram")
    expect(height.locator("svg[role=img] rect")).to_have_count(12)
    described = height.get_by_test_id("chart-text")
    expect(described).to_contain_text("height: values from 0 to 49 in 12 bins; the most between")
    assert height.locator("svg").get_attribute("aria-labelledby") == described.get_attribute("id")
    side = host.frame.locator("[data-testid=csv-chart][data-column=side]")
    expect(side).to_have_attribute("data-kind", "bars")
    expect(side.locator("li")).to_have_text(["north200", "south100"])  # label, bar, count
    host.page.evaluate("() => window.hostEmulator.setDisplayMode('fullscreen')")
    host.frame.locator("[data-testid=csv-chart]").first.scroll_into_view_if_needed()
    host.screenshot("files-charts")


def test_each_animal_shows_its_red_list_status_in_the_lists_colours(host: Host) -> None:
    result = host.call("get_zoo_animals", {"count": 20})
    host.expect_state("zoo", "ready")
    statuses = {a["id"]: a["conservation_status"]
                for a in result["_meta"]["allAnimalsById"].values()}
    codes = {"Least Concern": "LC", "Near Threatened": "NT", "Vulnerable": "VU",
             "Endangered": "EN", "Critically Endangered": "CR"}
    cards = host.by_testid("animal-card")
    expect(cards).to_have_count(20)
    for i in range(20):
        card = cards.nth(i)
        badge = card.get_by_test_id("iucn")
        expect(badge).to_have_attribute("data-code",
                                        codes[statuses[card.get_attribute("data-animal-id")]])
    critical = host.frame.locator("[data-testid=iucn][data-code=CR]").first
    assert critical.evaluate("(e) => getComputedStyle(e).backgroundColor") == "rgb(216, 30, 5)"
    host.set_locale("fr-FR")
    expect(critical).to_have_attribute("title", "En danger critique")


def test_each_animal_has_a_picture_of_its_own_named_for_a_screen_reader(host: Host) -> None:
    result = host.call("get_zoo_animals", {"count": 20})
    host.expect_state("zoo", "ready")
    pictures = host.by_testid("animal-picture")
    expect(pictures).to_have_count(20)
    drawn = pictures.evaluate_all(
        "(all) => all.map((p) => [p.dataset.scientificName, p.innerHTML,"
        " p.getAttribute('aria-label'), p.getBoundingClientRect().width])")
    details = result["_meta"]["allAnimalsById"]
    animals = result["structuredContent"]["animals"]
    assert [d[0] for d in drawn] == [details[a["id"]]["scientific_name"] for a in animals]
    by_species = {d[0]: d[1] for d in drawn}
    assert len(set(by_species.values())) == len(by_species)  # one drawing per species
    assert [d[2] for d in drawn] == [f"Illustration: {a['species']}" for a in animals]
    assert all(d[3] >= 50 for d in drawn)
    host.page.evaluate("() => window.hostEmulator.setDisplayMode('fullscreen')")
    expect(pictures.first).to_have_js_property("clientWidth", 96)  # the gallery: bigger


def test_an_image_shows_a_small_preview_painted_from_the_analysis(host: Host, file_host) -> None:
    import io

    from PIL import Image

    picture = Image.new("RGB", (120, 60), "white")
    picture.paste((0, 0, 255), (0, 0, 60, 60))
    out = io.BytesIO()
    picture.save(out, "PNG")
    url = file_host.offer(out.getvalue(), "image/png", name="half.png")
    host.call("analyze_file", {"file": {"download_url": url, "file_name": "half.png",
                                        "file_id": f"file_{uuid.uuid4().hex}"}})
    host.expect_state("files", "ready", timeout=30_000)
    preview = host.by_testid("image-preview")
    expect(preview).to_have_attribute("aria-label", "A small preview of the image")
    assert (preview.get_attribute("width"), preview.get_attribute("height")) == ("24", "12")
    left, right = preview.evaluate("""(c) => { const x = c.getContext('2d');
        return [[...x.getImageData(1, 6, 1, 1).data], [...x.getImageData(22, 6, 1, 1).data]]; }""")
    assert left[:3] == [0, 0, 255] and right[:3] == [255, 255, 255]


def test_a_comparison_draws_the_shared_columns_of_each_table_side_by_side(host: Host,
                                                                          file_host) -> None:
    """Two exports of the same readings, the second drifted upwards and without the `side`
    column: each shared column is a row with one chart per file; a column one file lacks is not
    drawn as shared."""
    before = "".join(f"{i},{i % 10},{i % 7},{i % 5}\n" for i in range(200))
    after = "".join(f"{i},{40 + i % 10},{'ns'[i % 2]},{i % 7},{i % 5}\n" for i in range(200))
    # 价格 and 数量: names that differ only outside ASCII, whose charts' ids must not meet.
    offered = [("before.csv", "day,height,价格,数量\n" + before),
               ("after.csv", "day,height,side,价格,数量\n" + after)]
    files = [{"download_url": file_host.offer(body.encode(), "text/csv", name=name),
              "file_id": f"file_{uuid.uuid4().hex}", "file_name": name} for name, body in offered]
    host.call("compare_files", {"files": files})
    host.expect_state("files", "ready", timeout=30_000)
    rows = host.by_testid("side-column")
    expect(rows).to_have_count(4)
    assert rows.evaluate_all("(rs) => rs.map((r) => r.dataset.column)") == [
        "day", "height", "价格", "数量"]
    height = host.frame.locator("[data-testid=side-column][data-column=height]")
    cells = height.get_by_test_id("side-cell")
    expect(cells).to_have_count(2)
    expect(cells.locator("figcaption")).to_have_text(["before.csv", "after.csv"])
    expect(cells.locator("[data-testid=csv-chart][data-kind=histogram]")).to_have_count(2)
    expect(cells.nth(0).get_by_test_id("chart-text")).to_contain_text(
        "height (before.csv): values from 0 to 9")
    expect(cells.nth(1).get_by_test_id("chart-text")).to_contain_text(
        "height (after.csv): values from 40 to 49")
    # One axis for the row: both read 0 to 49, and the drift shows as bars moved right.
    for cell in (cells.nth(0), cells.nth(1)):
        expect(cell.locator(".fl-chart-axis span")).to_have_text(["0", "49"])
    xs = [cell.locator("svg rect").evaluate_all("(rs) => rs.map((r) => +r.getAttribute('x'))")
          for cell in (cells.nth(0), cells.nth(1))]
    assert max(xs[0]) < 240 * 10 / 49 < min(xs[1]), xs
    # Each chart's words are its own: no id is used twice in the frame.
    ids = host.frame.locator("[id]").evaluate_all("(es) => es.map((e) => e.id)")
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    # ...and each chart's text is its own column's (the reports' charts too, once opened).
    for report in host.by_testid("comparison-file").all():
        report.locator("summary").click()
    labelled = host.frame.locator("svg[aria-labelledby]").evaluate_all(
        "(ss) => ss.map((s) => [s.closest('[data-column]').dataset.column,"
        " document.getElementById(s.getAttribute('aria-labelledby')).textContent])")
    assert labelled and all(text.startswith(column) for column, text in labelled), labelled
    host.page.evaluate("() => window.hostEmulator.setDisplayMode('fullscreen')")
    height.scroll_into_view_if_needed()
    host.screenshot("files-side-by-side")


def test_a_failure_shows_the_person_what_happened_and_never_the_models_advice(host: Host) -> None:
    result = host.call("get_zoo_animal_details", {"animal_id": "unicorn"})
    person, model = result["content"]
    assert person["annotations"]["audience"] == ["user", "assistant"]
    assert model["annotations"]["audience"] == ["assistant"]
    host.expect_state("zoo", "error")
    shown = host.by_testid("error")
    expect(shown).to_have_text(person["text"])
    assert model["text"] not in host.root("zoo").inner_text()
