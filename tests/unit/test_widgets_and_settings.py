import gzip
import hashlib
import json
import re
import subprocess
import sys

import pytest

from app.mcp.widgets import DIST, Widget, WidgetBundleMissing, is_origin, load_bundle
from app.settings import SettingsError, load_settings
from tests.conftest import ROOT
from tests.demos import tree_auth_env


def test_widget_uri_changes_when_its_html_changes():
    a = Widget(name="w", title="W", description="d", html_override="<p>1</p>")
    b = Widget(name="w", title="W", description="d", html_override="<p>2</p>")
    assert re.fullmatch(r"ui://widget/w-[0-9a-f]{12}\.html", a.uri_for("https://w.example"))
    assert a.uri_for("https://w.example") != b.uri_for("https://w.example")


def test_widget_uri_changes_with_what_it_is_served_with_and_only_then():
    """A client keeps a widget for good (its cache hint): a new CSP or domain after a deploy must
    be a
    new URI, the same widget the same one."""
    plain = Widget(name="w", title="W", description="d", html_override="<p>1</p>")
    same = Widget(name="w", title="W", description="d", html_override="<p>1</p>")
    linked = Widget(name="w", title="W", description="d", html_override="<p>1</p>",
                    redirect_domains=("https://files.example",))
    assert plain.uri_for("https://w.example") == same.uri_for("https://w.example")
    assert plain.uri_for("https://w.example") != plain.uri_for("https://other.example")
    assert plain.uri_for("https://w.example") != linked.uri_for("https://w.example")


def _dist(tmp_path, html: bytes, listed: str | None = None):
    (tmp_path / "w.html").write_bytes(html)
    sha = listed or hashlib.sha256(html).hexdigest()
    (tmp_path / "manifest.json").write_text(json.dumps({"widgets": {"w": {"file": "w.html", "sha256": sha}}}))
    return tmp_path


def test_a_bundle_is_read_from_the_manifest_and_named_by_the_hash_of_its_bytes(tmp_path):
    html = "<!doctype html><p>été</p>".encode()
    bundle = load_bundle("w", _dist(tmp_path, html))
    assert bundle.html == html.decode() and bundle.sha256 == hashlib.sha256(html).hexdigest()


def test_a_bundle_edited_after_the_build_is_refused_so_its_uri_cannot_lie(tmp_path):
    dist = _dist(tmp_path, b"<!doctype html><p>edited</p>", listed="0" * 64)
    with pytest.raises(WidgetBundleMissing, match="does not match manifest.json"):
        load_bundle("w", dist)


@pytest.mark.parametrize("setup", ["no manifest", "not listed", "file missing", "bad json"])
def test_a_missing_bundle_names_the_widget_and_the_build_command(tmp_path, setup):
    if setup != "no manifest":
        _dist(tmp_path, b"<!doctype html>")
    if setup == "not listed":
        (tmp_path / "manifest.json").write_text(json.dumps({"widgets": {}}))
    if setup == "file missing":
        (tmp_path / "w.html").unlink()
    if setup == "bad json":
        (tmp_path / "manifest.json").write_text("{")
    with pytest.raises(WidgetBundleMissing, match=r"widget 'w' has no built bundle .*npm --prefix widgets run build"):
        load_bundle("w", tmp_path)


def test_every_shipped_bundle_matches_the_manifest_and_fits_the_budget():
    manifest = json.loads((DIST / "manifest.json").read_text())
    # Every folder the build makes a widget of (widgets/scripts/build.mjs: one with an index.html, bar these).
    src = ROOT / "widgets" / "src"
    built = {d.name for d in src.iterdir() if (d / "index.html").is_file() and d.name not in {"bridge", "ui", "host"}}
    # None at all in a fork that removed every demo (and rebuilt, as docs/forking.md says).
    assert set(manifest["widgets"]) == built
    for name, entry in manifest["widgets"].items():
        raw = (DIST / entry["file"]).read_bytes()
        assert hashlib.sha256(raw).hexdigest() == entry["sha256"], name
        # 60 KB gzip each; the cafés' carries its map library (Leaflet) in 80 KB.
        budget = (80 if name == "cafes" else 60) * 1024
        assert len(gzip.compress(raw, 9)) <= entry["budget_gzip_bytes"] == budget, name
        assert b"ui/notifications/initialized" in raw, f"{name} never completes the MCP Apps handshake"


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


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"display_modes": ("inline", "sidebar")}, "display modes must be a non-empty subset"),
     ({"display_modes": ()}, "display modes must be a non-empty subset"),
     ({"connect_domains": ("https://*.example.com",)}, "connect domains must be https origins without wildcards"),
     ({"resource_domains": ("http://cdn.example.com",)}, "resource domains must be https origins"),
     ({"redirect_domains": ("https://example.com/path",)}, "redirect domains must be https origins without wildcards "
                                                           "or paths")],
)
def test_a_widget_chatgpt_would_reject_is_refused_when_declared(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        Widget(name="w", title="W", description="d", html_override="<p/>", **kwargs)


@pytest.mark.parametrize(("origin", "ok"), [
    ("https://docs.python.org", True), ("https://a.example.com:8443", True), ("http://127.0.0.1:8000", True),
    ("http://localhost:8000", True), ("http://[::1]:8000", True), ("http://example.com", False),
    ("https://example.com/", False), ("https://example.com/a", False), ("https://*.example.com", False),
    ("https://user@example.com", False), ("ftp://example.com", False), ("example.com", False),
    # What a browser reads as another host, or a CSP as another directive (an attack's findings).
    ("https://evil.example\\.tile.example", False), ("https://tile.example%2eevil", False),
    ("https://0x7f000001", False), ("https://:pw@tile.example", False),
    ("https://a.example;x", False), ("https://a.example,b.example", False),
    ("https://a.example:abc", False), ("https://a.example:99999", False),
    ("https://Tile.example", False), ("https://café.example", False), ("https://1.2.3.4", True),
    ("https://[2001:db8::1]:8443", True), ("https://a-b.example:443", True),
])
def test_only_bare_origins_are_accepted_as_widget_domains(origin, ok):
    assert is_origin(origin) is ok


def test_settings_derive_the_host_allow_list_and_resource_urls_from_the_base_url():
    s = load_settings(base_url="https://mcp.example.com/some/path", _env_file=None)
    assert s.base_url == "https://mcp.example.com"
    assert s.mcp_url == "https://mcp.example.com/mcp"
    assert s.resource_metadata_url == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    assert "mcp.example.com" in s.host_allow_list and "localhost:*" in s.host_allow_list


def test_comma_separated_allow_lists_are_split(monkeypatch):
    monkeypatch.setenv("APP_ALLOWED_HOSTS", "a.example.com, b.example.com:*")
    assert load_settings(_env_file=None).host_allow_list == ["a.example.com", "b.example.com:*"]


@pytest.mark.parametrize("typed", ["warning", "WARNING", " Warning "])
def test_log_level_and_format_are_read_whatever_their_case(monkeypatch, typed):
    monkeypatch.setenv("APP_LOG_LEVEL", typed)
    monkeypatch.setenv("APP_LOG_FORMAT", "JSON")
    settings = load_settings(_env_file=None)
    assert (settings.log_level, settings.log_format) == ("warning", "json")


@pytest.mark.parametrize(("typed", "pieces"), [
    ("true", {"lane", "protocol", "threads", "route", "settle"}), ("FALSE", set()), ("off", set()),
    ("lane, threads", {"lane", "threads"}), (" Protocol ", {"protocol"})])
def test_the_speed_up_package_is_turned_off_whole_or_kept_in_pieces(monkeypatch, typed, pieces):
    monkeypatch.setenv("APP_TUNING", typed)
    assert load_settings(_env_file=None).tuning == pieces


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("APP_LOG_LEVEL", "verbose", "APP_LOG_LEVEL: must be one of debug, info, warning, error (got 'verbose')"),
        ("APP_LOG_FORMAT", "xml", "APP_LOG_FORMAT: must be one of json, console (got 'xml')"),
        ("APP_BASE_URL", "ftp://example.com",
         "APP_BASE_URL: must be an absolute http(s) origin, e.g. https://mcp.example.com (got 'ftp://example.com')"),
        ("APP_ALLOWED_HOSTS", "*", "APP_ALLOWED_HOSTS: wildcard host names are not supported (DNS-rebinding "
                                   "protection): list each public host name; 'host:*' allows any port (got '*')"),
        ("APP_DB_POOL_SIZE", "lots", "APP_DB_POOL_SIZE: must be a whole number (got 'lots')"),
        ("APP_OPENAI_APPS_CHALLENGE", "abc def",
         "APP_OPENAI_APPS_CHALLENGE: must be the token OpenAI's platform gave, as it gave it: up "
         "to 512 printable characters without spaces (got 'abc def')"),
        ("APP_METRICS", "maybe",
         "APP_METRICS: must be true or false (also yes/no, on/off, 1/0) (got 'maybe')"),
        ("APP_TUNING", "lane,turbo", "APP_TUNING: must be true, false, or some of lane, protocol, threads, route, "
                                     "settle (unknown: turbo) (got 'lane,turbo')"),
        ("APP_MCP_FAST_LANE", "false", "APP_MCP_FAST_LANE: renamed to APP_TUNING"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_variable(monkeypatch, variable, value, line):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as bad:
        load_settings(_env_file=None)
    assert bad.value.lines == [line]


def test_a_variable_that_names_no_setting_is_one_line_with_the_closest_name():
    from app.parts import discover_features, unknown_settings

    given = ["APP_LOG_LEVLE", "app_metrcs", "APP_ZZZ", "APP_LOG_LEVEL", "APP_TEST_DATABASE_URL",
             "APP_REQUIRE_REDIS", "APP_MCP_FAST_LANE", "PATH", "HOME"]
    assert unknown_settings(discover_features(), given) == [
        "APP_LOG_LEVLE: no setting has this name, so it is ignored; did you mean APP_LOG_LEVEL?",
        "APP_ZZZ: no setting has this name, so it is ignored",
        "app_metrcs: no setting has this name, so it is ignored; did you mean APP_METRICS?"]


def test_the_cli_warns_of_a_misspelt_variable_in_the_environment_or_dotenv_and_goes_on(tmp_path):
    (tmp_path / ".env").write_text("APP_LOG_FROMAT=json\n")
    env = {"PATH": "/usr/bin:/bin", "APP_LOG_LEVLE": "debug",
           "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}", "APP_VAR_DIR": str(tmp_path),
           **tree_auth_env()}
    proc = subprocess.run([sys.executable, "-m", "app", "check"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        "APP_LOG_FROMAT: no setting has this name, so it is ignored; did you mean APP_LOG_FORMAT?",
        "APP_LOG_LEVLE: no setting has this name, so it is ignored; did you mean APP_LOG_LEVEL?"]


@pytest.mark.parametrize("command", ["serve", "migrate"])
def test_a_misspelt_name_is_said_before_the_bad_value_it_explains(tmp_path, command):
    env = {"PATH": "/usr/bin:/bin", "APP_STORAGE_BACKEND": "s3", "APP_S3_BUKET": "files",
           "APP_DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}", "APP_VAR_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "app", command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "APP_S3_BUKET: no setting has this name, so it is ignored; did you mean APP_S3_BUCKET?",
        "APP_STORAGE_BACKEND=s3 needs APP_S3_BUCKET"]
    assert list(tmp_path.iterdir()) == []  # nothing migrated, nothing generated


def test_the_cli_prints_one_line_per_bad_variable_and_exits_2(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "APP_LOG_LEVEL": "loud", "APP_DB_POOL_SIZE": "0", "APP_BASE_URL": "nope"}
    proc = subprocess.run([sys.executable, "-m", "app", "migrate"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert sorted(proc.stderr.splitlines()) == [
        "APP_BASE_URL: must be an absolute http(s) origin, e.g. https://mcp.example.com (got 'nope')",
        "APP_DB_POOL_SIZE: must be 1 or more (got '0')",
        "APP_LOG_LEVEL: must be one of debug, info, warning, error (got 'loud')",
    ]
