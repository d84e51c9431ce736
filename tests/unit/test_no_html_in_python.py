"""No Python module of the app writes HTML: pages come from the autoescaped templates
(``app/http/templates.py``), where every value is escaped unless a template made it markup. A tag
inside a string literal (f-strings, docstrings and bytes included) is HTML assembled by hand, and
fails here."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

# The elements of HTML (WHATWG), so that regular expressions' named groups (``(?P<name>``) and prose
# placeholders (``<feature>``) are not taken for tags.
ELEMENTS = (
    "a abbr address area article aside audio b base bdi bdo blockquote body br button canvas "
    "caption cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed "
    "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe "
    "img input ins kbd label legend li link main map mark menu meta meter nav noscript object ol "
    "optgroup option output p picture pre progress q rp rt ruby s samp script search section "
    "select slot small source span strong style sub summary sup svg table tbody td template "
    "textarea tfoot th thead time title tr track u ul var video wbr"
).split()
TAG = re.compile(r"</?(?:" + "|".join(ELEMENTS) + r")(?:\s[^<>]*)?/?>|<!doctype\b[^<>]*>",
                 re.IGNORECASE)


def html_in_strings(source: str) -> list[tuple[int, str]]:
    """(line, literal) of each string or bytes literal of ``source`` holding an HTML tag."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if TAG.search(text):
                found.append((node.lineno, text[:80]))
    return found


def test_no_module_of_the_app_holds_an_html_tag_in_a_string():
    found = [f"{path.relative_to(ROOT)}:{line}: {text!r}"
             for path in sorted((ROOT / "app").rglob("*.py"))
             for line, text in html_in_strings(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_scan_sees_tags_in_every_kind_of_literal_and_leaves_other_angle_brackets():
    source = '''
"""A docstring with <p>markup</p>."""
page = f"<strong>{name}</strong>"
raw = b'<!doctype html>'
attrs = '<input type="hidden" name="x">'
pattern = r"(?P<name>[a-z]+)(?<!x)"
prose = "python -m app <feature> <command>, a < b > c"
'''
    assert sorted({line for line, _ in html_in_strings(source)}) == [2, 3, 4, 5]
