"""Whether a page came out inert: no element, event handler or script link but the templates'
own (tests/unit/test_page_xss.py, tests/integration/test_pages_rendered.py, the directory's
pages)."""

from __future__ import annotations

from html.parser import HTMLParser

# The elements the templates write; a payload that became markup would add one of its own.
OURS = {"html", "head", "meta", "title", "style", "body", "main", "h1", "h2", "p", "strong", "bdi",
        "a", "form", "input", "div", "label", "button", "ul", "li", "small", "code", "section",
        "nav"}
LINKS = ("href", "action", "src", "formaction")


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def assert_inert(html: str, shown: list[str]) -> None:
    """No element, attribute or link of a payload's in ``html``; each of ``shown`` whole in its
    text."""
    doc = Elements()
    doc.feed(html)
    doc.close()
    assert {tag for tag, _ in doc.tags} <= OURS
    for tag, attrs in doc.tags:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        for name in LINKS:
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("javascript:", "data:", "vbscript:")), (tag, attrs)
    text = "".join(doc.text)
    for value in shown:
        assert value in text, value
