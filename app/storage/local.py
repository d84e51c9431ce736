"""Blobs on a local filesystem, downloaded through HMAC-signed links served by this app.

Layout: ``root/objects/<sha[:2]>/<sha>``. A write goes to ``root/tmp/`` first and is
fsynced, then renamed into place, so ``objects/`` never holds a partial object, even
after a crash. A crash can leave a file in ``tmp/``: ``sweep_partial`` (async, like every
other method here) removes the old ones.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TypeVar
from urllib.parse import quote, urlencode, urlsplit

import anyio
import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.storage.base import (
    SHA256_RE,
    ObjectInfo,
    ObjectMissing,
    PutResult,
    StorageUnavailable,
    check_link_request,
    content_disposition,
    is_plausible_mime,
    object_key,
    safe_file_name,
    served_content_type,
    sha_of_key,
    validate_sha,
)

_log = structlog.get_logger(__name__)
T = TypeVar("T")
_COPY_CHUNK = 1 << 20
_CHUNK = 64 * 1024  # download chunk
_LINK_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-store",
    "Content-Security-Policy": "sandbox; default-src 'none'",
}


def _refusal(status: int, error: str) -> Response:
    return JSONResponse({"error": error}, status_code=status, headers={"Cache-Control": "no-store"})


def _mkdir(path: Path) -> None:
    # One level at a time: mkdir(parents=True) would create the parents without the 0o700 mode.
    if not path.is_dir():
        _mkdir(path.parent)
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _stat_file(path: Path) -> os.stat_result | None:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


class LocalStorage:
    backend = "local"

    def __init__(self, root: Path, *, base_url: str, secret: bytes,
                 clock: Callable[[], float] = time.time) -> None:
        if len(secret) < 16:
            raise ValueError("the link signing secret must be at least 16 bytes")
        self.root = Path(root)
        self._objects = self.root / "objects"
        self._tmp = self.root / "tmp"
        self._base_url = base_url.rstrip("/")
        self._secret = secret
        self._clock = clock
        self._limiter = anyio.CapacityLimiter(8)

    def key_for(self, sha256: str) -> str:
        return object_key("", sha256)

    async def put_file(self, path: Path, sha256: str) -> PutResult:
        validate_sha(sha256)

        def put() -> PutResult:
            # Opened outside the guard: a missing or unreadable source is the caller's bug, not an outage.
            with open(path, "rb") as src, self._guard("put_file"):
                return self._store(sha256, lambda out: shutil.copyfileobj(src, out, _COPY_CHUNK))

        return await self._run(put)

    async def put_bytes(self, data: bytes) -> PutResult:
        sha256 = hashlib.sha256(data).hexdigest()

        def put() -> PutResult:
            with self._guard("put_bytes"):
                return self._store(sha256, lambda out: out.write(data))

        return await self._run(put)

    async def exists(self, key: str) -> bool:
        path = self._path(sha_of_key("", key))

        def exists() -> bool:
            with self._guard("exists"):
                return _stat_file(path) is not None

        return await self._run(exists)

    async def info(self, key: str) -> ObjectInfo | None:
        path = self._path(sha_of_key("", key))

        def info() -> ObjectInfo | None:
            with self._guard("info"):
                st = _stat_file(path)
            return None if st is None else ObjectInfo(key, st.st_size, datetime.fromtimestamp(st.st_mtime, UTC))

        return await self._run(info)

    async def delete(self, key: str) -> None:
        path = self._path(sha_of_key("", key))

        def delete() -> None:
            with self._guard("delete"), contextlib.suppress(FileNotFoundError):
                os.unlink(path)

        await self._run(delete)

    async def read(self, key: str) -> bytes:
        path = self._path(sha_of_key("", key))

        def read() -> bytes:
            with self._guard("read"):
                try:
                    return path.read_bytes()
                except FileNotFoundError:
                    raise ObjectMissing(key) from None

        return await self._run(read)

    async def list_objects(self) -> list[ObjectInfo]:
        def walk() -> list[ObjectInfo]:
            with self._guard("list_objects"):
                return list(self._walk())

        return await self._run(walk)

    def link_origin(self) -> str:
        parts = urlsplit(self._base_url)
        return f"{parts.scheme}://{parts.netloc}"

    async def download_url(self, key: str, *, file_name: str, content_type: str, ttl: int) -> str:
        sha = sha_of_key("", key)
        check_link_request(content_type, ttl)
        name = safe_file_name(file_name)
        exp = int(self._clock()) + ttl
        sig = self.sign(sha, name, content_type, exp)
        query = urlencode({"name": name, "type": content_type, "exp": exp, "sig": sig}, quote_via=quote)
        return f"{self._base_url}/files/blob/{sha}?{query}"

    async def aclose(self) -> None:
        return None

    async def sweep_partial(self, older_than: float) -> int:
        """Remove temp files of interrupted writes not modified for `older_than` seconds; returns how many."""
        cutoff = self._clock() - older_than

        def sweep() -> int:
            removed = 0
            with self._guard("sweep_partial"), contextlib.suppress(FileNotFoundError), os.scandir(self._tmp) as entries:
                for entry in entries:
                    with contextlib.suppress(FileNotFoundError):
                        if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                            os.unlink(entry.path)
                            removed += 1
            return removed

        return await self._run(sweep)

    def sign(self, sha: str, name: str, content_type: str, exp: int) -> str:
        # JSON framing: no choice of field values can make two different tuples sign alike.
        canonical = json.dumps(["blob-v1", sha, name, content_type, exp], separators=(",", ":"))
        return hmac.new(self._secret, canonical.encode(), hashlib.sha256).hexdigest()

    def routes(self) -> list[Route]:
        # {sha:path} so that anything after the prefix, slashes and dot segments included,
        # reaches the handler and is refused the same way.
        return [Route("/files/blob/{sha:path}", self._serve_blob, methods=["GET", "HEAD"])]

    async def _serve_blob(self, request: Request) -> Response:
        sha = request.path_params["sha"]
        if not SHA256_RE.fullmatch(sha):
            return _refusal(400, "malformed_sha")
        query = request.query_params
        name, content_type, exp, sig = (query.get(k) for k in ("name", "type", "exp", "sig"))
        if content_type is not None and not is_plausible_mime(content_type):
            return _refusal(400, "invalid_type")
        if name is None or content_type is None or sig is None or exp is None or not (
                exp.isascii() and exp.isdigit() and len(exp) <= 12):
            return _refusal(403, "invalid_signature")
        # Bytes, not str: compare_digest rejects non-ASCII strings with a TypeError.
        if not hmac.compare_digest(self.sign(sha, name, content_type, int(exp)).encode(), sig.encode()):
            return _refusal(403, "invalid_signature")
        if int(exp) < self._clock():
            return _refusal(403, "expired")
        # Opened before the first byte is sent: a delete_file or sweep removing the object meanwhile cannot cut
        # the response short (the open file outlives the unlink), and a missing object is still a clean 404.
        try:
            handle, size = await self._run(self._open_blob, self._path(sha))
        except FileNotFoundError:
            return _refusal(404, "not_found")
        except OSError:
            return _refusal(503, "unavailable")
        headers = {**_LINK_HEADERS, "Content-Type": served_content_type(content_type),
                   "Content-Disposition": content_disposition(name), "Content-Length": str(size)}
        if request.method == "HEAD":
            await self._run(handle.close)
            return Response(headers=headers)
        return StreamingResponse(self._chunks(handle), headers=headers)

    @staticmethod
    def _open_blob(path: Path) -> tuple[BinaryIO, int]:
        handle = path.open("rb")
        try:
            return handle, os.fstat(handle.fileno()).st_size
        except OSError:
            handle.close()
            raise

    async def _chunks(self, handle: BinaryIO) -> AsyncIterator[bytes]:
        try:
            while chunk := await self._run(handle.read, _CHUNK):
                yield chunk
        finally:
            with anyio.CancelScope(shield=True):
                await self._run(handle.close)

    def _path(self, sha: str) -> Path:
        return self._objects / sha[:2] / sha

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self._limiter)

    @contextlib.contextmanager
    def _guard(self, op: str) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            code = errno.errorcode.get(exc.errno or 0, "")
            _log.warning("storage.unavailable", backend=self.backend, op=op,
                         error=f"{type(exc).__name__} {code}".strip())
            raise StorageUnavailable() from exc

    def _store(self, sha: str, write: Callable[[BinaryIO], object]) -> PutResult:
        final, key = self._path(sha), object_key("", sha)
        try:
            os.utime(final)
            return PutResult(key, created=False)
        except FileNotFoundError:
            pass
        _mkdir(self._tmp)
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp, prefix="put-")
        try:
            with os.fdopen(fd, "wb") as out:
                write(out)
                out.flush()
                os.fsync(out.fileno())
            _mkdir(final.parent)
            os.replace(tmp_name, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
        _fsync_dir(final.parent)
        return PutResult(key, created=True)

    def _walk(self) -> Iterator[ObjectInfo]:
        with contextlib.suppress(FileNotFoundError), os.scandir(self._objects) as fans:
            for fan in fans:
                if len(fan.name) != 2 or not fan.is_dir(follow_symlinks=False):
                    continue
                with contextlib.suppress(FileNotFoundError), os.scandir(fan.path) as entries:
                    for entry in entries:
                        if not SHA256_RE.fullmatch(entry.name) or entry.name[:2] != fan.name:
                            continue
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            continue  # deleted while we walked
                        yield ObjectInfo(object_key("", entry.name), st.st_size,
                                         datetime.fromtimestamp(st.st_mtime, UTC))

