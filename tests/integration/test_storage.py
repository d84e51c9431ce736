"""app.storage on both backends: local disk (its signed links served by a real app on loopback) and S3 (moto in
server mode on loopback, reached through real boto3 and, for the fault tests, through a proxy that cuts connections).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import anyio
import anyio.lowlevel
import httpx
import pytest
from botocore.config import Config
from starlette.applications import Starlette

from app.storage import LocalStorage, ObjectMissing, S3Storage, Storage, StorageError, StorageUnavailable
from tests.s3server import CuttingProxy, S3Server, client, make_bucket, s3_server
from tests.serving import serving

MiB = 1024 * 1024
SECRET = b"test-link-secret-0123456789abcdef"
NON_ASCII_NAME = 'Résumé "final"\r\n\u202e.pdf'
NON_ASCII_DISPOSITION = "attachment; filename=\"R_sum_ final.pdf\"; filename*=UTF-8''R%C3%A9sum%C3%A9%20final.pdf"


def write_random(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for _ in range(size // MiB):
            chunk = os.urandom(MiB)
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


async def fetch(url: str, method: str = "GET") -> httpx.Response:
    async with httpx.AsyncClient(trust_env=False, timeout=30) as http:
        return await http.request(method, url)


async def streamed_sha(url: str) -> tuple[httpx.Response, str, int]:
    digest, size = hashlib.sha256(), 0
    async with httpx.AsyncClient(trust_env=False, timeout=30) as http, http.stream("GET", url) as response:
        async for chunk in response.aiter_bytes():
            digest.update(chunk)
            size += len(chunk)
    return response, digest.hexdigest(), size


# ---- fixtures -------------------------------------------------------------------------------------------------------

@dataclass
class Clock:
    now: float = field(default_factory=lambda: float(int(time.time())))

    def __call__(self) -> float:
        return self.now


@dataclass
class Local:
    storage: LocalStorage
    root: Path
    base_url: str
    clock: Clock


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    clock, made = Clock(), []

    def build(base_url: str) -> Starlette:
        made.append(LocalStorage(tmp_path / "store", base_url=base_url, secret=SECRET, clock=clock))
        return Starlette(routes=made[0].routes())

    with serving(build) as base_url:
        yield Local(made[0], tmp_path / "store", base_url, clock)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


def new_bucket(server: S3Server) -> str:
    name = f"t-{uuid.uuid4().hex[:16]}"
    make_bucket(server.endpoint_url, name)
    return name


@pytest.fixture
def bucket(s3: S3Server) -> str:
    return new_bucket(s3)


@pytest.fixture
def s3_storage(s3: S3Server, bucket: str) -> Iterator[S3Storage]:
    storage = S3Storage(bucket=bucket, endpoint_url=s3.endpoint_url, region="us-east-1")
    yield storage
    anyio.run(storage.aclose)


@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest) -> Storage:
    if request.param == "local":
        return request.getfixturevalue("local").storage
    return request.getfixturevalue("s3_storage")


@pytest.fixture
def direct(s3: S3Server) -> Iterator[Any]:
    """A boto3 client straight to moto: checks what really is in the bucket, behind the code under test."""
    s3_client = client(s3.endpoint_url)
    yield s3_client
    s3_client.close()


async def modified_of(storage: Storage, key: str) -> datetime:
    return next(info.modified for info in await storage.list_objects() if info.key == key)


# ---- the contract, on both backends ---------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_big_file_round_trip_and_reuse(storage: Storage, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    digest = write_random(source, 20 * MiB)

    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.lowlevel.checkpoint()
            ticks += 1

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(tick)
        first = await storage.put_file(source, digest)
        tasks.cancel_scope.cancel()
    assert ticks > 10, "the event loop was blocked during put_file"
    assert first.created and first.key == storage.key_for(digest)
    [info] = await storage.list_objects()
    assert (info.key, info.size) == (first.key, 20 * MiB)

    url = await storage.download_url(first.key, file_name="backup.tar", content_type="application/x-tar", ttl=60)
    response, served_digest, size = await streamed_sha(url)
    assert response.status_code == 200
    assert (served_digest, size) == (digest, 20 * MiB)
    assert response.headers["content-type"] == "application/x-tar"
    assert response.headers["content-disposition"] == 'attachment; filename="backup.tar"'

    # S3 keeps LastModified to the second: let one go by so the refresh is visible.
    await anyio.sleep(1.1 if storage.backend == "s3" else 0.02)
    again = await storage.put_file(source, digest)
    assert (again.key, again.created) == (first.key, False)
    assert await modified_of(storage, first.key) > info.modified
    assert sha(await storage.read(first.key)) == digest


@pytest.mark.anyio
async def test_put_bytes_computes_the_key(storage: Storage) -> None:
    data = b'{"thumbnail": true}'
    first = await storage.put_bytes(data)
    assert first == type(first)(storage.key_for(sha(data)), True)
    assert await storage.read(first.key) == data
    assert await storage.exists(first.key)
    assert (await storage.put_bytes(data)).created is False


@pytest.mark.anyio
async def test_exists_and_idempotent_delete(storage: Storage) -> None:
    key = (await storage.put_bytes(b"short-lived")).key
    assert await storage.exists(key)
    await storage.delete(key)
    assert not await storage.exists(key)
    await storage.delete(key)
    await storage.delete(storage.key_for("0" * 64))
    with pytest.raises(ObjectMissing) as missing:
        await storage.read(key)
    assert isinstance(missing.value, KeyError) and isinstance(missing.value, StorageError)
    assert str(missing.value) == "The stored file is missing."


@pytest.mark.anyio
async def test_list_objects(storage: Storage) -> None:
    assert await storage.list_objects() == []
    blobs = [b"a", b"bb" * 1000, os.urandom(70_000)]
    keys = {(await storage.put_bytes(blob)).key: len(blob) for blob in blobs}
    listed = await storage.list_objects()
    assert {info.key: info.size for info in listed} == keys
    for info in listed:
        assert info.modified.tzinfo is not None and info.modified.utcoffset().total_seconds() == 0
        assert abs((datetime.now(UTC) - info.modified).total_seconds()) < 120


@pytest.mark.anyio
async def test_download_with_non_ascii_name(storage: Storage) -> None:
    data = b"%PDF-1.7 not really"
    key = (await storage.put_bytes(data)).key
    url = await storage.download_url(key, file_name=NON_ASCII_NAME, content_type="application/pdf", ttl=300)
    response = await fetch(url)
    assert response.status_code == 200 and response.content == data
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == NON_ASCII_DISPOSITION
    encoded = re.search(r"filename\*=UTF-8''(\S+)", response.headers["content-disposition"]).group(1)
    assert unquote(encoded) == "Résumé final.pdf"


@pytest.mark.anyio
@pytest.mark.parametrize("active", ["text/html", "application/xhtml+xml", "image/svg+xml", "text/javascript"])
async def test_active_types_download_as_octet_stream(storage: Storage, active: str) -> None:
    key = (await storage.put_bytes(b"<script>alert(1)</script>")).key
    response = await fetch(await storage.download_url(key, file_name="x.html", content_type=active, ttl=60))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"


@pytest.mark.anyio
async def test_keys_and_link_arguments_are_validated(storage: Storage, tmp_path: Path) -> None:
    for bad in ["A" * 64, "0" * 63, "g" * 64, "../" + "0" * 61, "0" * 65]:
        with pytest.raises(ValueError):
            storage.key_for(bad)
    key = storage.key_for("ab" * 32)
    for foreign in ["../../etc/passwd", key + "/..", key.replace("objects/ab", "objects/cd"), "objects/" + "ab" * 32]:
        with pytest.raises(ValueError):
            await storage.exists(foreign)
        with pytest.raises(ValueError):
            await storage.delete(foreign)
    for content_type in ["text/plain; charset=utf-8", "text/plain\r\nX-Evil: 1", "plain", "a/" + "b" * 100]:
        with pytest.raises(ValueError):
            await storage.download_url(key, file_name="x", content_type=content_type, ttl=60)
    with pytest.raises(ValueError):
        await storage.download_url(key, file_name="x", content_type="text/plain", ttl=0)
    with pytest.raises(FileNotFoundError):  # the caller's file, not a storage outage
        await storage.put_file(tmp_path / "absent", "ab" * 32)


# ---- local: signed links ------------------------------------------------------------------------------------------

def with_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    for name, value in changes.items():
        if value is None:
            query.pop(name, None)
        else:
            query[name] = value
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{urlencode(query)}"


@pytest.mark.anyio
async def test_signed_link_headers(local: Local) -> None:
    key = (await local.storage.put_bytes(b"hello")).key
    url = await local.storage.download_url(key, file_name="hello.txt", content_type="text/plain", ttl=60)
    response = await fetch(url)
    assert response.status_code == 200 and response.content == b"hello"
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "private, no-store"
    assert response.headers["content-security-policy"] == "sandbox; default-src 'none'"
    head = await fetch(url, "HEAD")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == "5"


@pytest.mark.anyio
async def test_tampered_links_are_refused(local: Local) -> None:
    key = (await local.storage.put_bytes(b"secret report")).key
    url = await local.storage.download_url(key, file_name="report.txt", content_type="text/plain", ttl=60)
    sig = parse_qs(urlsplit(url).query)["sig"][0]
    tampered = [
        with_query(url, sig=("0" if sig[0] != "0" else "1") + sig[1:]),
        with_query(url, sig=None),
        with_query(url, sig="é" * 64),
        with_query(url, sig=""),
        with_query(url, name="report.exe"),
        with_query(url, name=None),
        with_query(url, type="application/pdf"),
        with_query(url, type=None),
        with_query(url, exp=str(int(local.clock.now) + 3600)),
        with_query(url, exp="soon"),
        with_query(url, exp=None),
        url.replace(key.rsplit("/", 1)[1], sha(b"another object")),
    ]
    for link in tampered:
        response = await fetch(link)
        assert (response.status_code, response.json()) == (403, {"error": "invalid_signature"}), link
    assert (await fetch(url)).status_code == 200


@pytest.mark.anyio
async def test_expired_link(local: Local) -> None:
    key = (await local.storage.put_bytes(b"x")).key
    url = await local.storage.download_url(key, file_name="x", content_type="text/plain", ttl=60)
    local.clock.now += 60
    assert (await fetch(url)).status_code == 200
    local.clock.now += 1
    response = await fetch(url)
    assert (response.status_code, response.json()) == (403, {"error": "expired"})


@pytest.mark.anyio
async def test_link_to_deleted_object(local: Local) -> None:
    key = (await local.storage.put_bytes(b"x")).key
    url = await local.storage.download_url(key, file_name="x", content_type="text/plain", ttl=60)
    await local.storage.delete(key)
    response = await fetch(url)
    assert (response.status_code, response.json()) == (404, {"error": "not_found"})


@pytest.mark.anyio
async def test_malformed_sha_and_type(local: Local) -> None:
    digest = sha(b"x")
    await local.storage.put_bytes(b"x")
    exp = int(local.clock.now) + 60
    for bad_sha in [digest.upper(), digest[:-1], digest + "0", "z" * 64]:
        query = urlencode({"name": "x", "type": "text/plain", "exp": exp,
                           "sig": local.storage.sign(bad_sha, "x", "text/plain", exp)})
        response = await fetch(f"{local.base_url}/files/blob/{bad_sha}?{query}")
        assert (response.status_code, response.json()) == (400, {"error": "malformed_sha"}), bad_sha
    for bad_type in ["text/plain\r\nSet-Cookie: a=b", "text/plain; charset=utf-8", "text", "a/" + "b" * 100]:
        # Signed with the real secret: the type is refused for what it is, not for a bad signature.
        query = urlencode({"name": "x", "type": bad_type, "exp": exp,
                           "sig": local.storage.sign(digest, "x", bad_type, exp)})
        response = await fetch(f"{local.base_url}/files/blob/{digest}?{query}")
        assert (response.status_code, response.json()) == (400, {"error": "invalid_type"}), bad_type


def raw_get(base_url: str, path: str) -> tuple[int, bytes]:
    """A request with the path exactly as written: httpx would normalise the dot segments away."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.anyio
async def test_path_traversal_is_impossible(local: Local) -> None:
    await local.storage.put_bytes(b"x")
    (local.root / "secret.txt").write_bytes(b"TOP SECRET")
    digest = sha(b"x")
    query = "?" + urlsplit(await local.storage.download_url(local.storage.key_for(digest), file_name="x",
                                                            content_type="text/plain", ttl=60)).query
    attempts = [
        "/files/blob/..%2F..%2Fsecret.txt", "/files/blob/../../secret.txt", "/files/blob/%2e%2e%2f%2e%2e%2fsecret.txt",
        "/files/blob/..%5C..%5Csecret.txt", f"/files/blob/{digest[:2]}/../../secret.txt", f"/files/blob/{digest}/..",
        f"/files/blob/{digest}%00", f"/files/blob/{digest}%2F..%2F..%2Fsecret.txt", "/files/blob/..", "/files/blob/",
    ]
    got = {path: await anyio.to_thread.run_sync(raw_get, local.base_url, path + query) for path in attempts}
    assert all(b"SECRET" not in body for _, body in got.values())
    # Every one reaches the route ({sha:path} matches anything, even nothing) and is refused as malformed.
    assert {path: status for path, (status, _) in got.items()} == dict.fromkeys(attempts, 400)


# ---- local: layout, crashes, failures -------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_local_layout_and_permissions(local: Local) -> None:
    digest = sha(b"layout")
    result = await local.storage.put_bytes(b"layout")
    assert result.key == f"objects/{digest[:2]}/{digest}"
    path = local.root / result.key
    assert path.read_bytes() == b"layout"
    assert path.stat().st_mode & 0o777 == 0o600
    for directory in (local.root, local.root / "objects", path.parent, local.root / "tmp"):
        assert directory.stat().st_mode & 0o777 == 0o700, directory
    assert os.listdir(local.root / "tmp") == []


CRASHING_WRITER = """
import sys
from pathlib import Path

import anyio

from app.storage import LocalStorage

storage = LocalStorage(Path(sys.argv[1]), base_url="http://127.0.0.1:9", secret=b"s" * 16)
anyio.run(storage.put_file, Path(sys.argv[2]), sys.argv[3])
"""


def kill_writer_mid_copy(root: Path, fifo: Path) -> None:
    """A second process stores a file fed through a FIFO; once part of it is in tmp/, SIGKILL it."""
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", CRASHING_WRITER, str(root), str(fifo), "ab" * 32],
                              cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 20
    try:
        while True:
            try:
                feed = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until the writer opened its end
                break
            except OSError:
                assert writer.poll() is None and time.monotonic() < deadline, "the writer never opened the FIFO"
                time.sleep(0.01)
        os.set_blocking(feed, True)
        # More than one copy chunk (1 MiB), less than two: the writer stores one, then waits for the rest.
        os.write(feed, b"p" * (MiB + MiB // 2))
        # Anywhere under root: a writer that wrote in place must be caught by the checks, not time out here.
        while not any(f.is_file() and f.stat().st_size >= MiB for f in root.rglob("*")):
            assert writer.poll() is None and time.monotonic() < deadline, "the writer never started copying"
            time.sleep(0.01)
    finally:
        writer.kill()
        writer.wait()
    os.close(feed)


@pytest.mark.anyio
async def test_crash_mid_write_leaves_no_object_and_is_swept(local: Local, tmp_path: Path) -> None:
    kept = (await local.storage.put_bytes(b"kept")).key
    await anyio.to_thread.run_sync(kill_writer_mid_copy, local.root, tmp_path / "feed")
    [partial] = os.listdir(local.root / "tmp")
    assert [info.key for info in await local.storage.list_objects()] == [kept]
    assert not await local.storage.exists(local.storage.key_for("ab" * 32))
    # A young temp file may be a write in progress in another worker: only old ones go.
    assert await local.storage.sweep_partial(older_than=3600) == 0
    local.clock.now += 7200
    assert await local.storage.sweep_partial(older_than=3600) == 1
    assert os.listdir(local.root / "tmp") == []
    assert await local.storage.read(kept) == b"kept"


def unavailable(json_log) -> list[dict]:
    return [{k: e[k] for k in ("backend", "op", "error")} for e in json_log() if e["event"] == "storage.unavailable"]


@pytest.mark.anyio
async def test_failed_write_leaves_nothing(local: Local, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           json_log) -> None:
    source = tmp_path / "src.bin"
    digest = write_random(source, 2 * MiB)

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("app.storage.local.os.fsync", disk_full)
    with pytest.raises(StorageUnavailable) as failure:
        await local.storage.put_file(source, digest)
    monkeypatch.undo()
    assert str(failure.value) == "File storage is unavailable, please retry shortly."
    assert unavailable(json_log) == [{"backend": "local", "op": "put_file", "error": "OSError ENOSPC"}]
    assert os.listdir(local.root / "tmp") == []
    assert not await local.storage.exists(local.storage.key_for(digest))


@pytest.mark.anyio
async def test_unusable_root_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    storage = LocalStorage(tmp_path / "file", base_url="http://127.0.0.1:9", secret=SECRET)
    with pytest.raises(StorageUnavailable):
        await storage.put_bytes(b"x")


# ---- S3 -------------------------------------------------------------------------------------------------------------

@pytest.mark.anyio
async def test_s3_big_upload_is_multipart(s3_storage: S3Storage, direct: Any, tmp_path: Path) -> None:
    source = tmp_path / "big.bin"
    digest = write_random(source, 20 * MiB)
    key = (await s3_storage.put_file(source, digest)).key
    head = direct.head_object(Bucket=s3_storage.bucket, Key=key)
    assert head["ETag"].strip('"').endswith("-3")  # 8 + 8 + 4 MiB parts
    assert (head["ContentLength"], head["ContentType"]) == (20 * MiB, "application/octet-stream")


@pytest.mark.anyio
async def test_s3_refresh_beyond_copy_object_limit(s3_storage: S3Storage, direct: Any, tmp_path: Path) -> None:
    source = tmp_path / "six.bin"
    digest = write_random(source, 6 * MiB)
    key = (await s3_storage.put_file(source, digest)).key
    before = direct.head_object(Bucket=s3_storage.bucket, Key=key)
    assert "-" not in before["ETag"]  # below the multipart threshold: one PutObject
    s3_storage.copy_object_limit = MiB
    await anyio.sleep(1.1)
    assert (await s3_storage.put_file(source, digest)).created is False
    after = direct.head_object(Bucket=s3_storage.bucket, Key=key)
    assert after["ETag"].strip('"').endswith("-1")  # the refresh went through a multipart copy
    assert after["LastModified"] > before["LastModified"]
    assert sha(await s3_storage.read(key)) == digest


@pytest.mark.anyio
@pytest.mark.parametrize(("sse", "kms_key_id"), [("AES256", None), ("aws:kms", "arn:aws:kms:us-east-1:1:key/k1")])
async def test_s3_server_side_encryption(s3: S3Server, bucket: str, direct: Any, sse: str,
                                         kms_key_id: str | None) -> None:
    storage = S3Storage(bucket=bucket, endpoint_url=s3.endpoint_url, sse=sse, kms_key_id=kms_key_id)
    try:
        key = (await storage.put_bytes(b"encrypted")).key
        assert (await storage.put_bytes(b"encrypted")).created is False
    finally:
        await storage.aclose()
    head = direct.head_object(Bucket=bucket, Key=key)
    assert head["ServerSideEncryption"] == sse
    assert head.get("SSEKMSKeyId") == kms_key_id


def test_s3_rejects_unknown_encryption() -> None:
    with pytest.raises(ValueError):
        S3Storage(bucket="b", sse="rot13")
    with pytest.raises(ValueError):
        S3Storage(bucket="b", kms_key_id="k")


@pytest.mark.anyio
async def test_s3_prefixes_are_separate_namespaces(s3: S3Server, bucket: str) -> None:
    a = S3Storage(bucket=bucket, prefix="tenant-a", endpoint_url=s3.endpoint_url)
    b = S3Storage(bucket=bucket, prefix="/tenant-b/", endpoint_url=s3.endpoint_url)
    try:
        key_a, key_b = (await a.put_bytes(b"a")).key, (await b.put_bytes(b"b")).key
        assert key_a == f"tenant-a/objects/{sha(b'a')[:2]}/{sha(b'a')}"
        assert key_b.startswith("tenant-b/objects/")
        assert [info.key for info in await a.list_objects()] == [key_a]
        assert [info.key for info in await b.list_objects()] == [key_b]
        with pytest.raises(ValueError):
            await a.delete(key_b)
    finally:
        await a.aclose()
        await b.aclose()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


FAST_FAIL = Config(connect_timeout=1, read_timeout=3, retries={"max_attempts": 1, "mode": "standard"})


@pytest.mark.anyio
async def test_s3_endpoint_down(tmp_path: Path, json_log) -> None:
    storage = S3Storage(bucket="anything", endpoint_url=f"http://127.0.0.1:{closed_port()}", region="us-east-1",
                        config=FAST_FAIL)
    source = tmp_path / "f.bin"
    digest = write_random(source, MiB)
    key = storage.key_for(digest)
    started = time.monotonic()
    for call in (lambda: storage.put_file(source, digest), lambda: storage.put_bytes(b"x"),
                 lambda: storage.exists(key), lambda: storage.read(key), lambda: storage.delete(key),
                 storage.list_objects):
        with pytest.raises(StorageUnavailable) as failure:
            await call()
        assert str(failure.value) == "File storage is unavailable, please retry shortly."
    assert time.monotonic() - started < 5
    assert [(e["op"], e["error"]) for e in unavailable(json_log)][:2] == [("put_file", "EndpointConnectionError"),
                                                           ("put_bytes", "EndpointConnectionError")]
    await storage.aclose()


@pytest.mark.anyio
async def test_s3_missing_bucket(s3: S3Server, tmp_path: Path, json_log) -> None:
    storage = S3Storage(bucket="no-such-bucket-here", endpoint_url=s3.endpoint_url)
    source = tmp_path / "f.bin"
    digest = write_random(source, MiB)
    for call in (lambda: storage.put_file(source, digest), lambda: storage.put_bytes(b"x"),
                 lambda: storage.read(storage.key_for(digest)), storage.list_objects):
        with pytest.raises(StorageUnavailable):
            await call()
    assert unavailable(json_log)[0]["error"] == "S3UploadFailedError:NoSuchBucket"
    # HEAD has no body to name the missing bucket: the object is simply not there.
    assert not await storage.exists(storage.key_for(digest))
    await storage.aclose()


@pytest.mark.anyio
async def test_s3_without_credentials(s3: S3Server, bucket: str, monkeypatch: pytest.MonkeyPatch, json_log) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    storage = S3Storage(bucket=bucket, endpoint_url=s3.endpoint_url)
    with pytest.raises(StorageUnavailable):
        await storage.put_bytes(b"x")
    assert unavailable(json_log)[0]["error"] == "NoCredentialsError"
    await storage.aclose()


# ---- S3 through a proxy that cuts connections ----------------------------------------------------------------------

@pytest.fixture
def big_file(tmp_path: Path) -> tuple[Path, str]:
    source = tmp_path / "big.bin"
    return source, write_random(source, 20 * MiB)


@pytest.mark.anyio
async def test_s3_server_dies_mid_upload(s3: S3Server, bucket: str, direct: Any,
                                         big_file: tuple[Path, str]) -> None:
    source, digest = big_file
    with CuttingProxy(s3.port, budget=10 * MiB) as proxy:
        storage = S3Storage(bucket=bucket, endpoint_url=f"http://127.0.0.1:{proxy.port}")
        with pytest.raises(StorageUnavailable):
            await storage.put_file(source, digest)
        await storage.aclose()
    assert proxy.dead, "the upload failed before the server died: the test proves nothing"
    assert direct.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    # The abort could not reach the dead server either: the parts stay (invisible) until swept.
    [upload] = direct.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert upload["Key"] == storage.key_for(digest)
    sweeper = S3Storage(bucket=bucket, endpoint_url=s3.endpoint_url)
    # (moto reports every upload as initiated in 2010, so the age cut-off itself cannot be shown against it.)
    assert await sweeper.sweep_partial(older_than=0) == 1
    assert direct.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    await sweeper.aclose()


@pytest.mark.anyio
async def test_s3_failed_part_aborts_the_upload(s3: S3Server, bucket: str, direct: Any,
                                                big_file: tuple[Path, str]) -> None:
    source, digest = big_file
    with CuttingProxy(s3.port, kill=rb"[?&]partNumber=2[& ]") as proxy:
        storage = S3Storage(bucket=bucket, endpoint_url=f"http://127.0.0.1:{proxy.port}")
        with pytest.raises(StorageUnavailable):
            await storage.put_file(source, digest)
        assert not await storage.exists(storage.key_for(digest))
        await storage.aclose()
    assert direct.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    assert direct.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []


@pytest.mark.anyio
async def test_every_download_link_points_at_the_declared_link_origin(storage: Storage) -> None:
    # The files widget lists link_origin() in its redirect_domains: a link elsewhere could not be opened.
    put = await storage.put_bytes(b"origin probe")
    url = await storage.download_url(put.key, file_name="p.txt", content_type="text/plain", ttl=60)
    parts = urlsplit(url)
    assert storage.link_origin() == f"{parts.scheme}://{parts.netloc}"


@pytest.mark.parametrize(("bucket", "region"), [("my-bucket", "eu-west-1"), ("my-bucket", "us-east-1"),
                                               ("dotted.bucket", "eu-west-1")])
@pytest.mark.anyio
async def test_an_aws_bucket_declares_the_host_botocore_signs_for(monkeypatch, bucket: str, region: str) -> None:
    # Virtual-hosted or path style, global or regional: whatever botocore picks (signed locally, no network).
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    storage = S3Storage(bucket=bucket, region=region)
    url = await storage.download_url(storage.key_for("a" * 64), file_name="x", content_type="text/plain", ttl=60)
    parts = urlsplit(url)
    assert storage.link_origin() == f"{parts.scheme}://{parts.netloc}"
