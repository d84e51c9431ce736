"""A deployed files feature for integration tests: the app over real HTTP on a loopback socket, a loopback file
server (allow-listed) that plays ChatGPT's file host and the hostile hosts, and either storage backend (a local
folder, or S3 on a moto server on loopback). Fixtures are registered in tests/integration/conftest.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult
from sqlalchemy import text

from app.db import Database
from app.main import create_app
from app.net.guard import OutboundGuard
from app.settings import load_part, load_settings
from app.storage import LocalStorage, Storage
from tests.conftest import empty_database, prepare
from tests.fakes import StaticTokenVerifier
from tests.s3server import make_bucket, s3_server
from tests.serving import answering, serving

CAP = 1_000_000  # APP_FILES_MAX_BYTES for these tests
FETCH_TIMEOUT = 2.0
ALICE, BOB = f"alice-{uuid.uuid4().hex[:8]}", f"bob-{uuid.uuid4().hex[:8]}"
ALL_SCOPES = ["files.read", "files.write", "search.read"]


class FileHandler(BaseHTTPRequestHandler):
    """Serves registered bodies at /f/<name>, and the misbehaving responses of the hostile-URL table."""

    protocol_version = "HTTP/1.1"
    server: FileServer

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _trickle(self, body: bytes, claimed: str, rate: int) -> None:
        """The body at ``rate`` bytes a second (a tenth of a second's worth at a time): a slow
        host."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", claimed)
        self.end_headers()
        step = max(1, rate // 10)
        for start in range(0, len(body), step):
            self.wfile.write(body[start:start + step])
            self.wfile.flush()
            time.sleep(0.1)  # the host's pace, not a test delay

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        self.server.hits += 1
        try:
            if path.startswith("/f/") and path[3:] in self.server.bodies:
                body, claimed = self.server.bodies[path[3:]]
                if delay := self.server.delays.get(path[3:]):
                    time.sleep(delay)  # a slow file host: the request that fetches it stays in flight
                if rate := self.server.rates.get(path[3:]):
                    self._trickle(body, claimed, rate)
                    self.server.finished[path[3:]] = time.monotonic()
                else:
                    self._send(200, body, {"Content-Type": claimed})
            elif path == "/redirect":
                self._send(302, b"", {"Location": query["to"][0]})
            elif path == "/declared-too-big":
                self.send_response(200)
                self.send_header("Content-Length", str(CAP * 5))
                self.end_headers()
                self.wfile.write(b"x" * 1000)
            elif path == "/chunked-too-big":
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for _ in range(40):  # 40 x 64 KiB, no length announced
                    self.wfile.write(b"10000\r\n" + b"z" * 65536 + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
            elif path == "/small-length-chunked-body":
                # Claims 1 KB, then sends a chunked body past the cap (the request-smuggling shape).
                self.send_response(200)
                self.send_header("Content-Length", "1000")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for _ in range(40):
                    self.wfile.write(b"10000\r\n" + b"z" * 65536 + b"\r\n")
                self.wfile.write(b"0\r\n\r\n")
            elif path == "/lying-length":
                # No length at all (HTTP/1.0, read until close): only the bytes counted while streaming can stop it.
                self.protocol_version = "HTTP/1.0"
                self.send_response(200)
                self.send_header("Connection", "close")
                self.end_headers()
                for _ in range(CAP // 65536 * 3):
                    self.wfile.write(b"w" * 65536)
            elif path == "/trickle":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(100000):
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.05)
            elif path == "/gone":
                self._send(404, b"expired")
            else:
                self._send(500, b"unknown path")
        except OSError:
            pass  # the server under test hung up, as it should


class FileServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), FileHandler)
        self.bodies: dict[str, tuple[bytes, str]] = {}
        self.delays: dict[str, float] = {}
        self.rates: dict[str, int] = {}  # bytes a second, for a body served slowly
        self.finished: dict[str, float] = {}  # when its last byte was written (monotonic)
        self.hits = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def offer(self, body: bytes, claimed: str = "application/octet-stream", name: str | None = None,
              delay: float = 0.0, rate: int | None = None) -> str:
        name = name or uuid.uuid4().hex
        self.bodies[name] = (body, claimed)
        if delay:
            self.delays[name] = delay
        if rate:
            self.rates[name] = rate
        return f"{self.origin}/f/{name}"


def serving_files() -> AbstractContextManager[FileServer]:
    """A FileServer answering on its loopback port for the duration of the block."""
    return answering(FileServer())


@pytest.fixture(scope="module")
def file_server() -> Iterator[FileServer]:
    with serving_files() as server:
        yield server


@pytest.fixture(scope="module")
def s3() -> Iterator[str]:
    with s3_server() as server:
        yield server.endpoint_url


@dataclass
class Deployed:
    mcp_url: str
    storage: Storage  # the server's; used only from its event loop
    db: Database
    backend: str
    inspect: Callable[[], Storage]  # a fresh instance on the same objects, for the test's own event loops
    spool: Path  # where the server writes fetched bodies while it works on them


def _resolver(host: str, port: int) -> list[str]:
    # Only the names the tests use: "files.test" is the allow-listed loopback file server, the others are the
    # DNS-rebinding rows. Nothing is ever looked up for real.
    table = {"files.test": ["127.0.0.1"], "loopback.test": ["127.0.0.1"], "private.test": ["10.0.0.1"],
             "metadata.test": ["169.254.169.254"], "mixed.test": ["93.184.216.34", "192.168.0.10"]}
    if host not in table:
        raise OSError(f"no such test host {host}")
    return table[host]


@pytest.fixture(scope="module", params=["local", "s3"])
def deployed(request: pytest.FixtureRequest, file_server: FileServer,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    backend = request.param
    port = file_server.server_address[1]
    # A database per backend: a row's storage key belongs to the backend that wrote it.
    database_url, drop = empty_database(tmp_path_factory.mktemp(f"files-db-{backend}"), f"files_{backend}")
    prepare(database_url)
    db = Database(database_url)
    holder: dict = {}
    files_dir = tmp_path_factory.mktemp(f"app-files-{backend}")

    def build(base_url: str):
        mcp_url = f"{base_url}/mcp"

        def token(subject: str, scopes: list[str]) -> AccessToken:
            return AccessToken(token=subject, client_id="chatgpt", scopes=scopes, subject=subject, resource=mcp_url)

        verifier = StaticTokenVerifier({"alice": token(ALICE, ALL_SCOPES), "bob": token(BOB, ALL_SCOPES),
                                        "reader": token(ALICE, ["files.read"])})
        settings = load_settings(database_url=database_url, base_url=base_url, log_format="json",
                                 outbound_allowlist=[f"127.0.0.1:{port}", f"files.test:{port}"],
                                 # these tests fetch far more files than one user would (the budget: test_limits.py)
                                 tool_budgets={"files": "100000/minute"}, _env_file=None)
        if backend == "s3":
            from app.storage.s3 import S3Storage

            bucket, endpoint = f"files-{uuid.uuid4().hex[:12]}", request.getfixturevalue("s3")
            make_bucket(endpoint, bucket)
            holder["make"] = lambda: S3Storage(bucket=bucket, prefix="app/", endpoint_url=endpoint)
        else:
            root = tmp_path_factory.mktemp("files")
            holder["make"] = lambda: LocalStorage(root, base_url=base_url, secret=b"k" * 32)
        storage = holder["server"] = holder["make"]()
        guard = OutboundGuard(allowlist=settings.outbound_allowlist, resolver=_resolver)
        from app.features.files.settings import FilesSettings  # here: a fork without the files feature keeps this

        files = load_part(FilesSettings, max_bytes=CAP, fetch_timeout=FETCH_TIMEOUT, dir=str(files_dir), _env_file=None)
        return create_app(settings, db=db, token_verifier=verifier, guard=guard, storage=storage, parts=[files])

    if backend == "s3":
        request.getfixturevalue("s3")  # started before the app, inside its credential environment
    with serving(build) as base_url:
        yield Deployed(f"{base_url}/mcp", holder["server"], db, backend, holder["make"], files_dir / "spool")
    db.dispose()
    drop()


def _client(url: str, token: str | None = None) -> Client:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60)),
                  mode="legacy")


async def call(d: Deployed, tool: str, args: dict, token: str | None = None, meta: dict | None = None
               ) -> CallToolResult:
    async with _client(d.mcp_url, token) as client:
        return await client.call_tool(tool, args, meta=meta)


def file_arg(url: str, *, file_id: str | None = None, name: str | None = None, mime: str | None = None) -> dict:
    arg = {"download_url": url, "file_id": file_id or f"file_{uuid.uuid4().hex}"}
    if name is not None:
        arg["file_name"] = name
    if mime is not None:
        arg["mime_type"] = mime
    return arg


def rows_for(d: Deployed, openai_file_id: str) -> int:
    query = text("SELECT count(*) FROM files WHERE openai_file_id = :f")
    return d.db.read_sync(lambda uow: uow.repository(_Raw).session.scalar(query, {"f": openai_file_id}))


class _Raw:
    """Plain SQL in tests, not through the repository under test."""

    def __init__(self, session) -> None:
        self.session = session


def ok(result: CallToolResult) -> dict:
    assert result.is_error is not True, result.content
    return result.structured_content


def download(url: str) -> httpx.Response:
    return httpx.get(url, timeout=30, trust_env=False)


def objects(d: Deployed) -> set[str]:
    return {o.key for o in anyio.run(d.inspect().list_objects)}
