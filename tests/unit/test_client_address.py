"""Who the client is: the trusted-proxy rule on the ASGI scope, the setting that lists the proxies, and the
shipped image, compose file and CLI, none of which may trust every forwarded address."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.http.middleware import client_address
from app.settings import SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio


async def seen_client(peer: str, forwarded: list[str], trusted: list[str]) -> str:
    seen: dict = {}

    async def app(scope, receive, send) -> None:
        seen["client"] = scope["client"][0]

    scope = {"type": "http", "method": "GET", "path": "/", "client": (peer, 40000),
             "headers": [(b"x-forwarded-for", value.encode()) for value in forwarded]}
    await client_address(app, trusted)(scope, None, None)
    return seen["client"]


@pytest.mark.parametrize(("peer", "forwarded", "trusted", "client"), [
    ("203.0.113.5", ["1.2.3.4"], ["127.0.0.1"], "203.0.113.5"),  # not a proxy: its header is its own writing
    ("127.0.0.1", ["1.2.3.4"], ["127.0.0.1"], "1.2.3.4"),
    ("127.0.0.1", ["6.6.6.6, 203.0.113.9"], ["127.0.0.1"], "203.0.113.9"),  # left of the proxy's entry: forged
    ("10.0.0.3", ["6.6.6.6, 203.0.113.9, 10.0.0.2"], ["10.0.0.0/8"], "203.0.113.9"),  # two proxies
    ("10.0.0.3", ["6.6.6.6", "203.0.113.9"], ["10.0.0.0/8"], "203.0.113.9"),  # the header sent twice
    ("::1", ["2001:db8::7"], ["127.0.0.1", "::1"], "2001:db8::7"),
    ("127.0.0.1", ["10.0.0.2, 10.0.0.1"], ["127.0.0.1", "10.0.0.0/8"], "10.0.0.2"),  # only proxies: the first
])
async def test_the_client_is_the_right_most_forwarded_address_no_trusted_proxy_wrote(peer, forwarded, trusted,
                                                                                     client):
    assert await seen_client(peer, forwarded, trusted) == client


def test_trusted_proxies_default_to_loopback_and_take_addresses_and_networks():
    assert load_settings(_env_file=None).trusted_proxies == ["127.0.0.1", "::1"]
    assert load_settings(trusted_proxies="10.0.0.0/8, 192.0.2.7,fd00::/8", _env_file=None).trusted_proxies == [
        "10.0.0.0/8", "192.0.2.7", "fd00::/8"]
    assert load_settings(trusted_proxies="", _env_file=None).trusted_proxies == []


async def test_a_network_written_with_host_bits_is_trusted_as_that_network():
    trusted = load_settings(trusted_proxies="10.0.0.1/8", _env_file=None).trusted_proxies
    assert trusted == ["10.0.0.0/8"]
    assert await seen_client("10.0.0.3", ["203.0.113.9"], trusted) == "203.0.113.9"


async def test_with_no_trusted_proxy_no_header_is_believed(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("APP_TRUSTED_PROXIES", "")
    trusted = load_settings(_env_file=None).trusted_proxies
    assert await seen_client("127.0.0.1", ["203.0.113.9"], trusted) == "127.0.0.1"


@pytest.mark.parametrize(("value", "says"), [("*", "'*' would trust an address every client can write"),
                                             ("10.0.0.0/8,proxy.internal", "'proxy.internal' is not an IP"),
                                             ("0.0.0.0/0,::/0", "'0.0.0.0/0' is too wide to be your proxies"),
                                             ("0.0.0.0/1,128.0.0.0/1", "'0.0.0.0/1' is too wide"),
                                             ("::/1", "'::/1' is too wide")])
def test_a_trusted_proxy_list_that_is_not_addresses_is_refused_by_name(value: str, says: str):
    with pytest.raises(SettingsError) as refused:
        load_settings(trusted_proxies=value, _env_file=None)
    assert len(refused.value.lines) == 1
    assert refused.value.lines[0].startswith("APP_TRUSTED_PROXIES: ") and says in refused.value.lines[0]


def test_the_image_and_the_compose_file_never_trust_every_forwarded_address():
    for name in ("Dockerfile", "docker-compose.yml"):
        text = (ROOT / name).read_text()
        assert "forwarded-allow-ips" not in text.lower() and "forwarded_allow_ips" not in text.lower(), name
        assert "APP_TRUSTED_PROXIES" in text, f"{name} should say which proxies it trusts"
        for line in text.splitlines():
            if "APP_TRUSTED_PROXIES" in line and not line.lstrip().startswith("#"):
                assert "*" not in line, (name, line)


def test_the_serve_command_no_longer_takes_a_forwarded_allow_list():
    run = subprocess.run([sys.executable, "-m", "app", "serve", "--forwarded-allow-ips", "*"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "unrecognized arguments: --forwarded-allow-ips" in run.stderr


@pytest.mark.parametrize(("name", "value", "says"), [
    ("tool_budgets", "search", "APP_TOOL_BUDGETS: 'search': write tool=rate"),
    ("tool_budgets", "search=lots", "APP_TOOL_BUDGETS: 'lots' is not a rate"),
    ("redis_url", "http://cache:6379", "APP_REDIS_URL: must be a redis://"),
    ("redis_url", "redis://cache:abc/0", "APP_REDIS_URL: Port could not be cast to integer"),
    ("redis_url", "redis://cache:99999/0", "APP_REDIS_URL: Port out of range"),
    ("redis_url", "redis://cache:6379/zero", "APP_REDIS_URL: the database is a number"),
    ("redis_url", "redis://cache:6379/0?socket_timeout=soon", "APP_REDIS_URL: Invalid value for 'socket_timeout'"),
    ("tool_budgets", "search=5/minute;10/hour", "APP_TOOL_BUDGETS: '5/minute;10/hour': one rate only"),
])
def test_a_bad_limit_setting_is_one_line_naming_it(name: str, value: str, says: str):
    with pytest.raises(SettingsError) as refused:
        load_settings(**{name: value}, _env_file=None)
    assert len(refused.value.lines) == 1 and refused.value.lines[0].startswith(says), refused.value.lines


def test_a_redis_url_with_a_password_is_never_echoed_in_the_refusal():
    with pytest.raises(SettingsError) as refused:
        load_settings(redis_url="http://user:hunter2@cache:6379", _env_file=None)
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "rediss://:secret@cache.internal:6380/2",
                                 "unix:///run/redis.sock?db=1", "redis://cache"])
def test_the_redis_urls_redis_py_takes_are_taken(url: str):
    from app.limits.counters import RedisCounter

    assert load_settings(redis_url=url, _env_file=None).redis_url == url
    RedisCounter(url, "p")  # built without a connection: the URL alone must be understood


def test_tool_budgets_parse_rates_and_off():
    settings = load_settings(tool_budgets="search=120/minute, analyze_file=off", _env_file=None)
    assert settings.tool_budgets == {"search": "120/minute", "analyze_file": None}
