"""Client metadata documents (CIMD) fetched for real from a loopback server, or refused before any connection
(names resolved by an injected resolver); and the limits of open registration (DCR) over real HTTP."""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.auth.scopes import Scope, ScopeCatalog
from app.authserver.clients import CimdResolver, ClientMetadataError, ClientRepository
from app.authserver.settings import AuthServerSettings
from app.db import Database
from app.main import create_app
from app.net import OutboundGuard
from app.settings import load_part, load_settings
from tests.serving import serving

pytestmark = pytest.mark.authserver

CATALOG = ScopeCatalog([Scope("notes.read", {"en": "Read your notes"})])
CALLBACK = "https://chatgpt.com/connector_platform_oauth_redirect"


class DocumentServer:
    """Serves whatever the test published at a path, and counts the requests per path."""

    def __init__(self) -> None:
        self.published: dict[str, tuple[int, Any, dict[str, str]]] = {}
        self.hits: Counter[str] = Counter()
        self.base_url = ""

    async def handle(self, request: Request) -> Response:
        self.hits[request.url.path] += 1
        status, body, headers = self.published.get(request.url.path, (404, {"error": "not found"}, {}))
        if isinstance(body, bytes):
            return Response(body, status_code=status, headers=headers, media_type="text/html")
        return JSONResponse(body, status_code=status, headers=headers)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.handle)])

    def new_url(self) -> str:
        return f"{self.base_url}/clients/{uuid.uuid4().hex}.json"

    def publish(self, url: str, body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.published[urlsplit(url).path] = (status, body, headers or {})

    def hits_for(self, url: str) -> int:
        return self.hits[urlsplit(url).path]


@pytest.fixture(scope="module")
def documents() -> Iterator[DocumentServer]:
    server = DocumentServer()
    with serving(lambda base: server.app()) as base_url:
        server.base_url = base_url
        yield server


@pytest.fixture
def resolver(documents: DocumentServer, db: Database) -> CimdResolver:
    """The loopback document server is allowlisted for the guard and the only accepted document host."""
    authority = urlsplit(documents.base_url).netloc
    return CimdResolver(OutboundGuard(allowlist=[authority]), db, CATALOG, hosts=["127.0.0.1"])


def document(client_id: str, **extra: Any) -> dict[str, Any]:
    return {"client_id": client_id, "client_name": "ChatGPT", "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none", "scope": "notes.read bogus", **extra}


def stored(db: Database, client_id: str) -> dict[str, Any] | None:
    def read(uow) -> dict[str, Any] | None:
        row = uow.repository(ClientRepository).get(client_id)
        if row is None:
            return None
        return {name: getattr(row, name) for name in ("kind", "client_name", "redirect_uris", "grant_types",
                                                       "token_endpoint_auth_method", "scope", "client_secret_hash",
                                                       "created_at", "expires_at")}

    return db.read_sync(read)


def expire(db: Database, client_id: str) -> None:
    """Make the cached copy stale, as if its lifetime had passed."""

    def write(uow) -> None:
        uow.repository(ClientRepository).get(client_id).expires_at = int(time.time()) - 1

    db.write_sync(write)


# -- fetched from a real server ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_valid_document_is_cached_for_its_max_age(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, document(url), headers={"cache-control": "public, max-age=600"})
    before = int(time.time())
    await resolver.ensure(url)
    after = int(time.time())
    row = stored(db, url)
    assert row is not None
    assert row["kind"] == "cimd"
    assert row["client_name"] == "ChatGPT"
    assert row["redirect_uris"] == [CALLBACK]
    assert row["grant_types"] == ["authorization_code", "refresh_token"]
    assert row["token_endpoint_auth_method"] == "none"
    assert row["scope"] == "notes.read"
    assert row["client_secret_hash"] is None
    assert before + 600 <= row["expires_at"] <= after + 600
    assert documents.hits_for(url) == 1


@pytest.mark.anyio
async def test_a_cached_document_is_not_fetched_again_within_its_lifetime(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, document(url), headers={"cache-control": "max-age=600"})
    await resolver.ensure(url)
    documents.publish(url, document(url, client_name="Changed"), headers={"cache-control": "max-age=600"})
    await resolver.ensure(url)
    await resolver.ensure(url)
    assert documents.hits_for(url) == 1
    assert stored(db, url)["client_name"] == "ChatGPT"


@pytest.mark.anyio
async def test_an_expired_document_is_fetched_again_and_replaces_the_copy(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, document(url), headers={"cache-control": "max-age=600"})
    await resolver.ensure(url)
    first = stored(db, url)
    expire(db, url)
    documents.publish(url, document(url, client_name="Changed"), headers={"cache-control": "max-age=120"})
    before = int(time.time())
    await resolver.ensure(url)
    row = stored(db, url)
    assert documents.hits_for(url) == 2
    assert row["client_name"] == "Changed"
    assert row["created_at"] == first["created_at"]
    assert before + 120 <= row["expires_at"] <= int(time.time()) + 120


@pytest.mark.anyio
async def test_a_document_whose_client_id_is_not_its_url_is_refused(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, document("https://chatgpt.com/oauth/client.json"))
    with pytest.raises(ClientMetadataError, match="client_id must equal its URL") as caught:
        await resolver.ensure(url)
    assert caught.value.error == "invalid_client"
    assert stored(db, url) is None


@pytest.mark.anyio
@pytest.mark.parametrize("secret", [{"client_secret": "s3cret"}, {"client_secret_expires_at": 0}])
async def test_a_document_carrying_a_client_secret_is_refused(documents, resolver, db, secret):
    url = documents.new_url()
    documents.publish(url, document(url, **secret))
    with pytest.raises(ClientMetadataError, match="cannot carry a client secret") as caught:
        await resolver.ensure(url)
    assert caught.value.error == "invalid_client"
    assert stored(db, url) is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"redirect_uris": ["http://example.com/cb"]}, "redirect_uris"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "token_endpoint_auth_method"),
        ({"grant_types": ["refresh_token"]}, "grant_types"),
    ],
)
async def test_a_document_with_unacceptable_metadata_is_refused_as_an_invalid_client(documents, resolver, db, extra,
                                                                                      message):
    url = documents.new_url()
    documents.publish(url, document(url, **extra))
    with pytest.raises(ClientMetadataError, match=f"client metadata document: {message}") as caught:
        await resolver.ensure(url)
    assert caught.value.error == "invalid_client"
    assert stored(db, url) is None


@pytest.mark.anyio
async def test_a_document_on_a_host_not_accepted_is_refused_without_a_request(documents, db):
    url = documents.new_url()
    documents.publish(url, document(url))
    authority = urlsplit(documents.base_url).netloc
    picky = CimdResolver(OutboundGuard(allowlist=[authority]), db, CATALOG, hosts=["chatgpt.com", "claude.ai"])
    before = sum(documents.hits.values())
    with pytest.raises(ClientMetadataError, match="accepted only from chatgpt.com, claude.ai; not from 127.0.0.1") \
            as caught:
        await picky.ensure(url)
    assert caught.value.error == "invalid_client"
    assert sum(documents.hits.values()) == before
    assert stored(db, url) is None


@pytest.mark.anyio
async def test_a_failing_server_leaves_the_stale_copy_in_use(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, document(url), headers={"cache-control": "max-age=600"})
    await resolver.ensure(url)
    expire(db, url)
    stale = stored(db, url)
    documents.publish(url, {"error": "boom"}, status=500)
    await resolver.ensure(url)  # no error: the last good copy is kept
    assert documents.hits_for(url) == 2
    kept = stored(db, url)
    assert {**kept, "expires_at": None} == {**stale, "expires_at": None}
    # ... and tried again in a minute, not on every request meanwhile
    assert time.time() + 50 < kept["expires_at"] <= time.time() + 60
    await resolver.ensure(url)
    assert documents.hits_for(url) == 2


@pytest.mark.anyio
async def test_a_failing_server_without_a_cached_copy_is_refused(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, {"error": "boom"}, status=500)
    with pytest.raises(ClientMetadataError, match="could not be fetched: .*HTTP 500") as caught:
        await resolver.ensure(url)
    assert caught.value.error == "invalid_client"
    assert documents.hits_for(url) == 1
    assert stored(db, url) is None


@pytest.mark.anyio
async def test_a_document_that_is_not_a_json_object_is_refused(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, [document(url)])
    with pytest.raises(ClientMetadataError, match="client_id must equal its URL"):
        await resolver.ensure(url)
    assert stored(db, url) is None


@pytest.mark.anyio
async def test_a_document_that_is_not_json_is_refused(documents, resolver, db):
    url = documents.new_url()
    documents.publish(url, b"<html>sign in</html>")
    with pytest.raises(ClientMetadataError, match="could not be fetched") as caught:
        await resolver.ensure(url)
    assert caught.value.error == "invalid_client"
    assert stored(db, url) is None


# -- resolved to internal addresses: refused before connecting ---------------------------------------------------


@pytest.fixture
def tripwire(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Records, and refuses, any connection the guard (or anything in Python) would open."""
    attempts: list[tuple[str, int]] = []

    def sync_connect(self, host, port, *args, **kwargs):
        attempts.append((host, port))
        raise httpcore.ConnectError("tripwire: no connection allowed here")

    async def async_connect(self, host, port, *args, **kwargs):
        return sync_connect(self, host, port)

    def no_socket(*args, **kwargs):
        attempts.append(("socket", 0))
        raise ConnectionRefusedError("tripwire: no connection allowed here")

    monkeypatch.setattr(httpcore.SyncBackend, "connect_tcp", sync_connect)
    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", async_connect)
    monkeypatch.setattr(socket.socket, "connect", no_socket)
    monkeypatch.setattr(socket.socket, "connect_ex", no_socket)
    monkeypatch.setattr(socket, "create_connection", no_socket)
    return attempts


class FakeResolver:
    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        if host not in self.table:
            raise socket.gaierror("unknown name")
        return self.table[host]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("ip", "reason"),
    [
        ("10.0.0.5", "resolves to a non-public address"),
        ("192.168.1.1", "resolves to a non-public address"),
        ("169.254.169.254", "resolves to a cloud metadata address"),
        ("fd00:ec2::254", "resolves to a cloud metadata address"),
    ],
)
async def test_a_document_host_resolving_to_an_internal_address_is_refused_before_connecting(db, tripwire, ip,
                                                                                             reason):
    host = f"clients-{uuid.uuid4().hex[:8]}.example"
    url = f"https://{host}/oauth/client.json"
    names = FakeResolver({host: [ip]})
    cimd = CimdResolver(OutboundGuard(resolver=names), db, CATALOG, hosts=[host])
    with pytest.raises(ClientMetadataError, match="client metadata document could not be fetched") as caught:
        await cimd.ensure(url)
    assert caught.value.error == "invalid_client"
    assert reason in str(caught.value)
    assert names.calls == [(host, 443)]
    assert tripwire == []
    assert stored(db, url) is None


@pytest.mark.anyio
async def test_one_internal_address_among_public_ones_refuses_the_document_host(db, tripwire):
    host = f"clients-{uuid.uuid4().hex[:8]}.example"
    url = f"https://{host}/oauth/client.json"
    names = FakeResolver({host: ["93.184.216.34", "10.0.0.5"]})
    cimd = CimdResolver(OutboundGuard(resolver=names), db, CATALOG, hosts=[host])
    with pytest.raises(ClientMetadataError, match="could not be fetched: .*resolves to a non-public address"):
        await cimd.ensure(url)
    assert tripwire == []


# -- open registration (DCR) over real HTTP ------------------------------------------------------------------------


@contextmanager
def auth_server(database_url: str, var_dir: Path, trusted_proxies: str | None = None, **own: Any) -> Iterator[str]:
    def build(base_url: str):
        proxies = {"trusted_proxies": trusted_proxies} if trusted_proxies else {}
        return create_app(load_settings(database_url=database_url, base_url=base_url, var_dir=str(var_dir),
                                        log_format="json", _env_file=None, **proxies),
                          parts=[load_part(AuthServerSettings, _env_file=None, **own)])

    with serving(build) as base_url:
        yield base_url


REGISTRATION = {"redirect_uris": [CALLBACK], "client_name": "Test client", "token_endpoint_auth_method": "none"}


@pytest.fixture(scope="module")
def open_registration(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with auth_server(database_url, tmp_path_factory.mktemp("var")) as base_url:
        yield base_url


def test_the_third_registration_from_one_address_within_the_hour_is_refused(database_url, tmp_path):
    with auth_server(database_url, tmp_path / "var", limit_registrations_per_address="2/hour") as base_url, \
            httpx.Client(base_url=base_url, timeout=10) as client:
        statuses = [client.post("/register", json=REGISTRATION).status_code for _ in range(2)]
        third = client.post("/register", json=REGISTRATION)
    assert statuses == [201, 201]
    assert third.status_code == 429
    assert third.json()["error"] == "slow_down"
    assert "this address" in third.json()["error_description"]
    assert 3590 <= int(third.headers["retry-after"]) <= 3600  # the window opened with the first registration
    assert third.headers["cache-control"] == "no-store"


def test_registrations_from_every_address_together_are_bounded(database_url, tmp_path):
    with auth_server(database_url, tmp_path / "var", limit_registrations_total="3/hour",
                     trusted_proxies="127.0.0.1") as base_url, httpx.Client(base_url=base_url, timeout=10) as client:
        statuses = [client.post("/register", json=REGISTRATION, headers={"x-forwarded-for": f"198.51.100.{i}"})
                    .status_code for i in range(5)]
    assert statuses == [201, 201, 201, 429, 429]


def test_a_registration_body_that_is_not_json_is_invalid_client_metadata(open_registration):
    response = httpx.post(f"{open_registration}/register", content=b"{not json",
                          headers={"content-type": "application/json"}, timeout=10)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_a_registration_body_that_is_not_an_object_is_invalid_client_metadata(open_registration):
    response = httpx.post(f"{open_registration}/register", json=[REGISTRATION], timeout=10)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


def test_a_registration_with_a_public_http_redirect_is_invalid_redirect_uri(open_registration):
    response = httpx.post(f"{open_registration}/register", json={"redirect_uris": ["http://example.com/cb"]},
                          timeout=10)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"


def test_a_valid_registration_returns_the_client_without_a_secret_for_a_public_client(open_registration):
    response = httpx.post(f"{open_registration}/register", json=REGISTRATION, timeout=10)
    assert response.status_code == 201
    body = response.json()
    assert body["client_id"].startswith("dcr_")
    assert body["redirect_uris"] == [CALLBACK]
    assert body["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in body


def big_body() -> bytes:
    return json.dumps({**REGISTRATION, "client_name": "x" * 70_000}).encode()


def test_a_declared_70_kb_registration_body_is_refused_with_413(open_registration):
    body = big_body()
    response = httpx.post(f"{open_registration}/register", content=body,
                          headers={"content-type": "application/json"}, timeout=10)
    assert response.request.headers["content-length"] == str(len(body))
    assert response.status_code == 413
    assert response.json()["error"] == "invalid_client_metadata"  # RFC 7591's error for a registration


def test_a_chunked_70_kb_registration_body_is_refused_with_413(open_registration):
    body = big_body()

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 8192):
            yield body[start:start + 8192]

    response = httpx.post(f"{open_registration}/register", content=chunks(),
                          headers={"content-type": "application/json"}, timeout=10)
    assert "content-length" not in response.request.headers
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 413
    assert response.json()["error"] == "invalid_client_metadata"  # RFC 7591's error for a registration


def test_with_open_registration_off_there_is_no_register_endpoint_nor_its_metadata(database_url, tmp_path):
    with auth_server(database_url, tmp_path / "var", oauth_dcr=False) as base_url, \
            httpx.Client(base_url=base_url, timeout=10) as client:
        metadata = client.get("/.well-known/oauth-authorization-server").json()
        registered = client.post("/register", json=REGISTRATION)
    assert "registration_endpoint" not in metadata and metadata["client_id_metadata_document_supported"] is True
    assert registered.status_code == 404
