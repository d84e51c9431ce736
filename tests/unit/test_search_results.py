"""The text the model reads from a search: counts agree with their nouns."""

from __future__ import annotations

import pytest

from app.features.search.schemas import SearchHit, SearchResults
from app.features.search.tool import search_result

pytestmark = pytest.mark.demo("search")


def _hits(n: int) -> SearchResults:
    return SearchResults(results=[SearchHit(id=f"d{i}", title=f"T{i}", url=f"https://docs.python.org/3/{i}",
                                            snippet="s", score=1.0) for i in range(n)])


def test_search_says_top_result_for_one_hit_and_top_n_results_for_more():
    assert search_result("q", _hits(1)).content[0].text == "Top result for 'q':\n1. T0 — https://docs.python.org/3/0"
    assert search_result("q", _hits(2)).content[0].text.startswith("Top 2 results for 'q':\n1. T0")
    assert search_result("q", _hits(0)).content[0].text == "No documentation matches 'q'."


def test_the_widget_is_told_which_link_origins_the_host_will_open():
    for n in (0, 2):
        assert search_result("q", _hits(n)).meta == {"linkOrigins": ["https://docs.python.org"]}


def test_snippets_read_without_docstring_markup():
    from app.features.search.service import readable

    assert readable("Use :func:`~os.path.join` or :mod:`json`, not ``eval``.") == (
        "Use join or json, not eval.")
    assert readable("See :class:`the path <pathlib.Path>` at <https://docs.python.org>") == (
        "See the path at https://docs.python.org")
    assert readable("match(pattern, string, flags=0, match=<built-in method match of re.Pattern "
                    "object>)\n\n  more") == "match(pattern, string, flags=0, match=…) more"
    assert readable("a < b and c > d") == "a < b and c > d"  # no repr: left alone
