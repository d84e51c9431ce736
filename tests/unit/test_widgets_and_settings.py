import pytest
from pydantic import ValidationError

from app.mcp.widgets import Widget
from app.settings import Settings


def test_widget_uri_changes_when_its_html_changes():
    a = Widget(name="w", title="W", description="d", html_override="<p>1</p>")
    b = Widget(name="w", title="W", description="d", html_override="<p>2</p>")
    assert a.uri.startswith("ui://widget/w.") and a.uri.endswith(".html")
    assert a.uri != b.uri


def test_widget_meta_speaks_both_csp_dialects_and_both_domain_keys():
    w = Widget(name="w", title="W", description="d", connect_domains=("https://api.example.com",),
               redirect_domains=("https://example.com",), html_override="<p/>")
    meta = w.resource_meta("https://w.example.com")
    assert meta["ui"]["csp"]["connectDomains"] == ["https://api.example.com"]
    assert meta["openai/widgetCSP"]["connect_domains"] == ["https://api.example.com"]
    assert meta["openai/widgetCSP"]["redirect_domains"] == ["https://example.com"]
    assert "redirectDomains" not in meta["ui"]["csp"]
    assert meta["ui"]["domain"] == meta["openai/widgetDomain"] == "https://w.example.com"
    assert meta["ui"]["prefersBorder"] is meta["openai/widgetPrefersBorder"] is True


def test_settings_derive_the_host_allow_list_from_the_base_url():
    s = Settings(base_url="https://mcp.example.com/some/path", _env_file=None)
    assert s.base_url == "https://mcp.example.com"
    assert s.mcp_url == "https://mcp.example.com/mcp"
    assert "mcp.example.com" in s.host_allow_list and "localhost:*" in s.host_allow_list


def test_settings_reject_a_base_url_that_is_not_an_http_origin():
    with pytest.raises(ValidationError):
        Settings(base_url="ftp://example.com", _env_file=None)


def test_comma_separated_allow_lists_are_split(monkeypatch):
    monkeypatch.setenv("APP_ALLOWED_HOSTS", "a.example.com, b.example.com")
    assert Settings(_env_file=None).host_allow_list == ["a.example.com", "b.example.com"]
