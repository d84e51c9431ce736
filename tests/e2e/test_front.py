"""The HTTPS front of the one-machine stack (deploy/compose/Caddyfile, docker-compose.yml's
`front`), run as shipped on loopback with Debian's caddy, in front of the real server: its config
is valid for a public name; every public route the app serves reaches the app through it and no
internal one does; a client sending its request a byte at a time is cut off at the front's
deadline while other clients are served. Only the site address (plain HTTP on a loopback port: no
certificate here) and the deadlines (shortened, to keep the test short) differ from production's.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.directory.routes import CHALLENGE_PATH
from tests.conftest import ROOT
from tests.demos import authserver_installed, tree_auth_env
from tests.e2e.server import LiveServer, free_port
from tests.routes import INTERNAL_PATHS, INTERNAL_PREFIXES, served_paths, upstream_provider

pytestmark = [pytest.mark.any_database]

CADDYFILE = ROOT / "deploy" / "compose" / "Caddyfile"
HEADER_DEADLINE, READ_DEADLINE = 2, 4  # seconds (production: 10 s and 40 s)
ID = "0123456789abcdef0123456789abcdef"  # echoed by the app (x-request-id), never by the front
CHALLENGE = "oai-apps-challenge_9f2c1e7a"  # the domain verification token, as the platform gives it


def caddy() -> str:
    path = shutil.which("caddy")
    if path is None:
        if os.environ.get("APP_REQUIRE_CADDY") == "1":
            pytest.fail("APP_REQUIRE_CADDY=1 but caddy is not installed")
        pytest.skip("caddy is not installed (Debian: apt-get install caddy)")
    return path


def _caddy_env(tmp: Path, **values: str) -> dict[str, str]:
    # Its data (certificates, locks) and configuration folders under the test's own directory.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp),
            "XDG_DATA_HOME": str(tmp / "data"), "XDG_CONFIG_HOME": str(tmp / "config"), **values}


def test_the_shipped_front_config_is_valid_for_a_public_name(tmp_path):
    done = subprocess.run([caddy(), "validate", "--config", str(CADDYFILE),
                           "--adapter", "caddyfile"],
                          env=_caddy_env(tmp_path, DOMAIN="mcp.example.com", UPSTREAM="app:8000"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Valid configuration" in done.stderr + done.stdout


def test_a_broken_front_config_is_refused_by_the_same_validation(tmp_path):
    broken = tmp_path / "Caddyfile"
    broken.write_text(CADDYFILE.read_text().replace("read_header", "read_headers"))
    done = subprocess.run([caddy(), "validate", "--config", str(broken), "--adapter", "caddyfile"],
                          env=_caddy_env(tmp_path, DOMAIN="mcp.example.com"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "read_headers" in done.stderr, done.stderr[-2000:]


@pytest.fixture(scope="module")
def app(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("front-app")
    # Development (its /dev pages exist, to show they stay inside), with every part that adds
    # routes on: an upstream provider's sign-in, local storage's downloads.
    env = {"APP_VAR_DIR": str(tmp / "var"), "APP_STORAGE_BACKEND": "local",
           "APP_STORAGE_DIR": str(tmp / "files"), "APP_OPENAI_APPS_CHALLENGE": CHALLENGE,
           **tree_auth_env(), **upstream_provider()}
    server = LiveServer(database_url, tmp / "server.log", extra_env=env).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def front(app: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("front")
    port = free_port()
    env = _caddy_env(tmp, DOMAIN=f"http://127.0.0.1:{port}", UPSTREAM=f"127.0.0.1:{app.port}",
                     FRONT_HEADER_TIMEOUT=f"{HEADER_DEADLINE}s",
                     FRONT_READ_TIMEOUT=f"{READ_DEADLINE}s")
    log = (tmp / "caddy.log").open("wb")
    process = subprocess.Popen([caddy(), "run", "--config", str(CADDYFILE),
                                "--adapter", "caddyfile"],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while not _answers(base):
            assert process.poll() is None and time.monotonic() < deadline, (
                (tmp / "caddy.log").read_text()[-3000:])
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _answers(base: str) -> bool:
    try:
        httpx.get(f"{base}/healthz", timeout=1)
        return True
    except httpx.TransportError:
        return False


def test_every_public_route_reaches_the_app_through_the_front_and_no_internal_one(
        app, front, tmp_path, monkeypatch):
    paths = served_paths(tmp_path, monkeypatch)
    internal = [p for p in paths if p in INTERNAL_PATHS or p.startswith(INTERNAL_PREFIXES)]
    public = [p for p in paths if p not in internal]
    assert "/mcp" in public
    if authserver_installed():
        assert {"/account", "/login/p/callback"} <= set(public)
    assert {"/healthz", "/readyz", "/metrics", "/dev/logs"} <= set(internal)
    with httpx.Client(timeout=10, headers={"x-request-id": ID}) as client:
        # Directly, each internal page answers (they exist: what the front hides is real).
        assert client.get(f"http://127.0.0.1:{app.port}/healthz").status_code == 200
        reached = {p: client.get(front + p).headers.get("x-request-id") == ID for p in paths}
        hidden = {p: client.get(front + p) for p in internal}
    assert [p for p in public if not reached[p]] == []
    assert [p for p in internal if reached[p]] == []
    assert {p: (r.status_code, r.text) for p, r in hidden.items()} == dict.fromkeys(
        internal, (404, "Not found"))


def test_the_domain_verification_token_is_served_directly_and_through_the_front(app, front):
    with httpx.Client(timeout=10) as client:
        for base in (f"http://127.0.0.1:{app.port}", front):
            answer = client.get(base + CHALLENGE_PATH)
            assert (answer.status_code, answer.text) == (200, CHALLENGE), base
            assert answer.headers["content-type"].startswith("text/plain")
            assert answer.headers["cache-control"] == "no-store"


def _raw_get(base: str, target: str) -> bytes:
    """The response head to ``GET target`` sent as written (httpx would normalise the path)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nx-request-id: {ID}\r\n"
                     f"Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data.split(b"\r\n\r\n", 1)[0].lower()


# Spellings that the app would take for its probes (which answer anyone who reaches them):
# percent-encoded, dot segments, doubled slashes, another case, a query.
@pytest.mark.parametrize("target", [
    "/%68ealthz", "/%2Fhealthz", "//healthz", "/x/../healthz", "/./healthz", "/HEALTHZ",
    "/readyz/.", "/%72eadyz", "/livez?x=1", "/li%76ez", "/%6Detrics", "/dev/./logs"])
def test_a_spelling_of_an_internal_path_does_not_reach_the_app_either(front, target):
    # Caddy matches paths case-insensitively, decoded and cleaned: each of these is its own 404
    # ("/readyz/." reaches the app, which has no such route: its 404 too). Never the page.
    head = _raw_get(front, target)
    assert head.split(b" ")[1] in (b"404", b"400"), head


def _slow_client(base: str, request: bytes, cut: threading.Event, gave_up: threading.Event) -> None:
    """Sends ``request`` a byte every 0.3 s; ``cut`` once the front closes the connection."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        try:
            for byte in request:
                sock.sendall(bytes([byte]))
                time.sleep(0.3)
                if gave_up.is_set():
                    return
            sock.settimeout(10)
            sock.recv(65536)
        except OSError:
            pass
        cut.set()


@pytest.mark.parametrize(("kind", "request_bytes", "deadline"), [
    # slowloris: the head never ends
    ("head", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Slow: " + b"a" * 200, HEADER_DEADLINE),
    # a quick head, then a body a byte at a time
    ("body", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             b"Content-Length: 400\r\n\r\n" + b" " * 400, READ_DEADLINE),
])
def test_a_slow_client_is_cut_off_at_the_fronts_deadline_while_others_are_served(
        front, kind, request_bytes, deadline):
    cut = [threading.Event() for _ in range(20)]
    gave_up = threading.Event()
    started = time.monotonic()
    threads = [threading.Thread(target=_slow_client, args=(front, request_bytes, event, gave_up),
                                daemon=True) for event in cut]
    for thread in threads:
        thread.start()
    try:
        # Meanwhile, other clients are answered by the app, at once.
        with httpx.Client(timeout=5, headers={"x-request-id": ID}) as client:
            served = [client.get(f"{front}/.well-known/oauth-protected-resource/mcp")
                      for _ in range(5)]
        assert [(r.status_code, r.headers.get("x-request-id")) for r in served] == [(200, ID)] * 5
        # Every slow client is cut off near the deadline, long before it could finish sending
        # (a byte each 0.3 s: its request alone takes over 60 s).
        for event in cut:
            assert event.wait(timeout=deadline + 5), f"a slow {kind} was still connected"
        assert time.monotonic() - started < deadline + 5
    finally:
        gave_up.set()
