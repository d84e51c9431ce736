"""Faults in the middle of analyze_file leave storage and database consistent: storage dying mid-upload
records nothing; the database failing after the upload leaves no object behind. Real parts throughout: a moto
S3 server behind a proxy that resets connections, and a database that cannot be opened."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult

from app.db import Database
from app.features.files.settings import FilesSettings
from app.main import create_app
from app.settings import load_part, load_settings
from app.storage import LocalStorage, StorageUnavailable
from tests.conftest import count_rows
from tests.fakes import StaticTokenVerifier
from tests.s3server import CuttingProxy, client, make_bucket, s3_server
from tests.serving import serving

pytestmark = pytest.mark.demo("files")

MiB = 1024 * 1024
BODY = os.urandom(20 * MiB)  # big enough for a multipart upload (8 MiB parts)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        try:
            self.wfile.write(BODY)
        except OSError:
            pass


@pytest.fixture(scope="module")
def file_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/big.bin"
    server.shutdown()
    server.server_close()


def _settings(database_url: str, base_url: str, file_url: str, files_dir: Path):
    port = file_url.split(":")[2].split("/")[0]
    return load_settings(database_url=database_url, base_url=base_url, log_format="json",
                         outbound_allowlist=[f"127.0.0.1:{port}"], _env_file=None)


def _parts(files_dir: Path) -> list[FilesSettings]:
    return [load_part(FilesSettings, max_bytes=64 * MiB, dir=str(files_dir), _env_file=None)]


async def _analyze(mcp_url: str, file_url: str, openai_file_id: str) -> CallToolResult:
    http = httpx2.AsyncClient(timeout=120)
    async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy") as mcp:
        return await mcp.call_tool("analyze_file", {"file": {"download_url": file_url, "file_id": openai_file_id}})


def test_s3_dying_mid_upload_is_a_clear_error_and_records_nothing(database_url: str, file_url: str, tmp_path: Path):
    openai_file_id = f"file_{uuid.uuid4().hex}"
    with s3_server() as s3:
        bucket = f"fault-{uuid.uuid4().hex[:12]}"
        make_bucket(s3.endpoint_url, bucket)
        with CuttingProxy(s3.port, budget=10 * MiB) as proxy:
            from app.storage.s3 import S3Storage

            def build(base_url: str):
                storage = S3Storage(bucket=bucket, endpoint_url=f"http://127.0.0.1:{proxy.port}")
                return create_app(_settings(database_url, base_url, file_url, tmp_path), parts=_parts(tmp_path),
                          storage=storage)

            with serving(build) as base_url:
                result = anyio.run(_analyze, f"{base_url}/mcp", file_url, openai_file_id)
        assert proxy.dead, "the upload finished before the storage died: this test proved nothing"
        assert client(s3.endpoint_url).list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    assert result.is_error is True
    assert result.content[0].text == "File storage is unavailable, please retry shortly."
    assert count_rows(database_url, f"files WHERE openai_file_id = '{openai_file_id}'") == 0


def test_a_database_failure_after_the_upload_leaves_no_object(file_url: str, tmp_path: Path):
    # A database server that is down: nothing listens on the port, every transaction fails as an outage.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    broken = Database(f"postgresql+psycopg://postgres@127.0.0.1:{port}/down", connect_timeout=2)
    root = tmp_path / "files"

    def build(base_url: str):
        storage = LocalStorage(root, base_url=base_url, secret=b"s" * 32)
        return create_app(_settings(broken.url, base_url, file_url, tmp_path), parts=_parts(tmp_path),
                          db=broken, storage=storage)

    with serving(build) as base_url:
        result = anyio.run(_analyze, f"{base_url}/mcp", file_url, f"file_{uuid.uuid4().hex}")
    assert result.is_error is True
    assert result.content[0].text == "The database is unavailable, please retry shortly."
    stored = [p for p in (root / "objects").rglob("*") if p.is_file()] if (root / "objects").exists() else []
    assert stored == []
    # It did get as far as storing (the folder exists): the cleanup, not an early failure, left it empty.
    assert (root / "objects").is_dir()


class RacingStorage(LocalStorage):
    """Local storage where a concurrent delete (another account's delete_file, a sweep) removes an object right
    after this call found it already stored: the race the ingest step closes after its commit."""

    async def put_file(self, path, sha256):
        result = await super().put_file(path, sha256)
        if not result.created:
            await self.delete(result.key)
        return result


def test_an_object_deleted_between_reuse_and_commit_is_put_back(database_url: str, file_url: str, tmp_path: Path):
    root = tmp_path / "files"

    def build(base_url: str):
        return create_app(_settings(database_url, base_url, file_url, tmp_path), parts=_parts(tmp_path),
                          storage=RacingStorage(root, base_url=base_url, secret=b"s" * 32))

    with serving(build) as base_url:
        first = anyio.run(_analyze, f"{base_url}/mcp", file_url, f"file_{uuid.uuid4().hex}")
        second = anyio.run(_analyze, f"{base_url}/mcp", file_url, f"file_{uuid.uuid4().hex}")  # same bytes: reused
        assert first.is_error is not True and second.is_error is not True, second.content
        stored = anyio.run(LocalStorage(root, base_url=base_url, secret=b"s" * 32).exists,
                           f"objects/{second.structured_content['file']['sha256'][:2]}/"
                           f"{second.structured_content['file']['sha256']}")
    assert stored is True


class UndeletableStorage(LocalStorage):
    """Storage whose deletes and lookups fail, as an S3 outage right after a commit would."""

    async def delete(self, key: str) -> None:
        raise StorageUnavailable()

    async def info(self, key: str):
        raise StorageUnavailable()


def test_a_storage_failure_after_the_commit_does_not_turn_a_done_delete_into_an_error(
        database_url: str, file_url: str, tmp_path: Path):
    root = tmp_path / "files"
    subject = f"alice-{uuid.uuid4().hex[:8]}"

    def build(base_url: str):
        verifier = StaticTokenVerifier({"alice": AccessToken(token="alice", client_id="c", subject=subject,
                                                             scopes=["files.write", "files.read"],
                                                             resource=f"{base_url}/mcp")})
        return create_app(_settings(database_url, base_url, file_url, tmp_path), parts=_parts(tmp_path),
                          token_verifier=verifier,
                          storage=UndeletableStorage(root, base_url=base_url, secret=b"s" * 32))

    async def analyse_then_delete(mcp_url: str) -> CallToolResult:
        http = httpx2.AsyncClient(timeout=120, headers={"authorization": "Bearer alice"})
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy") as mcp:
            kept = await mcp.call_tool("analyze_file", {"file": {"download_url": file_url, "file_id": "file_x"}})
            assert kept.is_error is not True, kept.content
            return await mcp.call_tool("delete_file", {"file_id": kept.structured_content["file"]["id"]})

    with serving(build) as base_url:
        deleted = anyio.run(analyse_then_delete, f"{base_url}/mcp")
    assert deleted.is_error is not True, deleted.content
    assert deleted.structured_content["deleted"] is True  # the row is gone; its bytes wait for the sweeper
