"""Blobs in an S3-compatible bucket, downloaded through presigned URLs.

Credentials come from the standard AWS chain (environment, shared files, instance or
task roles); this module never reads them. A failed multipart upload is aborted by
boto3 when the server can still be reached; when it cannot, the parts stay behind
invisible (no object appears) until ``sweep_partial`` (run by ``python -m app files sweep``) or a bucket
lifecycle rule (AbortIncompleteMultipartUpload) removes them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import boto3.session
import structlog
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from app.storage.base import (
    ObjectInfo,
    ObjectMissing,
    PutResult,
    StorageUnavailable,
    check_link_request,
    content_disposition,
    object_key,
    served_content_type,
    sha_of_key,
)

_log = structlog.get_logger(__name__)
T = TypeVar("T")
MiB = 1024 * 1024
_STORED_TYPE = "application/octet-stream"
_UPLOAD = TransferConfig(multipart_threshold=8 * MiB, multipart_chunksize=8 * MiB, max_concurrency=4,
                         use_threads=True)
_NOT_FOUND = frozenset({"404", "NoSuchKey", "NotFound"})
_SSE_MODES = (None, "AES256", "aws:kms")


def _error_name(exc: BaseException) -> str:
    cause = exc.__context__ if not isinstance(exc, ClientError) else exc
    if isinstance(cause, ClientError):
        return f"{type(exc).__name__}:{cause.response.get('Error', {}).get('Code', '?')}"
    return type(exc).__name__


def _is_not_found(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in _NOT_FOUND


class S3Storage:
    backend = "s3"
    # CopyObject refuses sources over 5 GiB; beyond that the refresh copy goes multipart.
    copy_object_limit = 5 * 1024 * MiB

    def __init__(self, *, bucket: str, prefix: str = "", region: str | None = None, endpoint_url: str | None = None,
                 sse: str | None = None, kms_key_id: str | None = None, client: Any | None = None,
                 config: Config | None = None) -> None:
        """`config` is merged over the defaults (timeouts, retries); `client` replaces the whole client."""
        if sse not in _SSE_MODES:
            raise ValueError(f"sse must be one of {_SSE_MODES}")
        if kms_key_id and sse != "aws:kms":
            raise ValueError("kms_key_id needs sse='aws:kms'")
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self._sse: dict[str, str] = {}
        if sse:
            self._sse["ServerSideEncryption"] = sse
        if kms_key_id:
            self._sse["SSEKMSKeyId"] = kms_key_id
        self._owns_client = client is None
        if client is None:
            defaults = Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 3, "mode": "standard"},
                              signature_version="s3v4", s3={"addressing_style": "path" if endpoint_url else "auto"},
                              # 8 operations at once, an upload running 4 parts at once: keep their connections.
                              max_pool_connections=32)
            # A private session: the default one is shared process-wide and not thread-safe.
            client = boto3.session.Session().client(
                "s3", region_name=region, endpoint_url=endpoint_url,
                config=defaults.merge(config) if config else defaults)
        # Any: boto3 makes its clients' methods at run time, from the service model (no stubs here).
        self._client: Any = client
        self._limiter = anyio.CapacityLimiter(8)

    def key_for(self, sha256: str) -> str:
        return object_key(self.prefix, sha256)

    async def put_file(self, path: Path, sha256: str) -> PutResult:
        key = self.key_for(sha256)

        def upload() -> None:
            # upload_file reads the file part by part (multipart above the threshold): never whole in memory.
            self._client.upload_file(str(path), self.bucket, key, Config=_UPLOAD,
                                     ExtraArgs={"ContentType": _STORED_TYPE, **self._sse})

        return await self._run("put_file", self._put, key, upload)

    async def put_bytes(self, data: bytes) -> PutResult:
        key = self.key_for(hashlib.sha256(data).hexdigest())

        def upload() -> None:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=_STORED_TYPE, **self._sse)

        return await self._run("put_bytes", self._put, key, upload)

    async def exists(self, key: str) -> bool:
        sha_of_key(self.prefix, key)
        return await self._run("exists", lambda: self._head(key) is not None)

    async def info(self, key: str) -> ObjectInfo | None:
        sha_of_key(self.prefix, key)
        head = await self._run("info", lambda: self._head(key))
        if head is None:
            return None
        return ObjectInfo(key, head["ContentLength"], head["LastModified"].astimezone(UTC))

    async def delete(self, key: str) -> None:
        sha_of_key(self.prefix, key)
        # DeleteObject answers 204 for a missing key too.
        await self._run("delete", lambda: self._client.delete_object(Bucket=self.bucket, Key=key))

    async def read(self, key: str) -> bytes:
        sha_of_key(self.prefix, key)

        def read() -> bytes:
            try:
                response = self._client.get_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if _is_not_found(exc):
                    raise ObjectMissing(key) from None
                raise
            with response["Body"] as body:
                return body.read()

        return await self._run("read", read)

    def link_origin(self) -> str:
        # Ask botocore itself where a link points (region endpoints, virtual-hosted or path style).
        # A twin client signs with throwaway keys: no credential lookup, no network, same addressing.
        # Only a custom endpoint is passed on: naming AWS's own one makes botocore switch to path style.
        meta = self._client.meta
        custom = None if (urlsplit(meta.endpoint_url).hostname or "").endswith(".amazonaws.com") else meta.endpoint_url
        twin = boto3.session.Session(aws_access_key_id="link-origin", aws_secret_access_key="link-origin").client(
            "s3", region_name=meta.region_name, endpoint_url=custom, config=meta.config)
        parts = urlsplit(twin.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": "probe"}))
        return f"{parts.scheme}://{parts.netloc}"

    async def download_url(self, key: str, *, file_name: str, content_type: str, ttl: int) -> str:
        sha_of_key(self.prefix, key)
        check_link_request(content_type, ttl)
        params = {"Bucket": self.bucket, "Key": key, "ResponseContentType": served_content_type(content_type),
                  "ResponseContentDisposition": content_disposition(file_name)}
        # In a thread: signing may have to resolve or refresh credentials over the network.
        return await self._run("download_url", lambda: self._client.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=ttl))

    async def list_objects(self) -> list[ObjectInfo]:
        def walk() -> list[ObjectInfo]:
            found = []
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=f"{self.prefix}objects/")
            for page in pages:
                for item in page.get("Contents", ()):
                    try:
                        sha_of_key(self.prefix, item["Key"])
                    except ValueError:
                        continue  # not one of ours
                    found.append(ObjectInfo(item["Key"], item["Size"], item["LastModified"].astimezone(UTC)))
            return found

        return await self._run("list_objects", walk)

    async def sweep_partial(self, older_than: float) -> int:
        """Abort multipart uploads under our prefix started more than ``older_than`` seconds ago (a failed upload
        whose abort could not reach the server leaves its parts behind, billed but invisible); returns how many."""
        def sweep() -> int:
            cutoff = datetime.now(UTC) - timedelta(seconds=older_than)
            aborted = 0
            pages = self._client.get_paginator("list_multipart_uploads").paginate(
                Bucket=self.bucket, Prefix=f"{self.prefix}objects/")
            for page in pages:
                for upload in page.get("Uploads", ()):
                    if upload["Initiated"] < cutoff:
                        self._client.abort_multipart_upload(Bucket=self.bucket, Key=upload["Key"],
                                                            UploadId=upload["UploadId"])
                        aborted += 1
            return aborted

        return await self._run("sweep_partial", sweep)

    async def aclose(self) -> None:
        if self._owns_client:
            await anyio.to_thread.run_sync(self._client.close, limiter=self._limiter)

    def _put(self, key: str, upload: Callable[[], None]) -> PutResult:
        head = self._head(key)
        if head is not None:
            try:
                self._refresh(key, head["ContentLength"])
                return PutResult(key, created=False)
            except ClientError as exc:
                if not _is_not_found(exc):
                    raise
                # Deleted between the HEAD and the copy: store it afresh.
        upload()
        return PutResult(key, created=True)

    def _refresh(self, key: str, size: int) -> None:
        # S3 has no "touch": copying the object onto itself (a metadata REPLACE is what makes
        # such a copy legal) gives it a new LastModified without moving the bytes through us.
        args = {"ContentType": _STORED_TYPE, "MetadataDirective": "REPLACE", **self._sse}
        source = {"Bucket": self.bucket, "Key": key}
        if size <= self.copy_object_limit:
            self._client.copy_object(Bucket=self.bucket, Key=key, CopySource=source, **args)
        else:
            config = TransferConfig(multipart_threshold=self.copy_object_limit, multipart_chunksize=64 * MiB,
                                    max_concurrency=4, use_threads=True)
            self._client.copy(source, self.bucket, key, ExtraArgs=args, Config=config)

    def _head(self, key: str) -> dict[str, Any] | None:
        try:
            return self._client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _is_not_found(exc):
                return None
            raise

    async def _run(self, op: str, fn: Callable[..., T], *args: Any) -> T:
        def guarded() -> T:
            try:
                return fn(*args)
            except (BotoCoreError, ClientError, Boto3Error) as exc:
                # The detail (endpoint, bucket, key) goes to the log; the user gets one safe line.
                _log.warning("storage.unavailable", backend=self.backend, op=op, error=_error_name(exc))
                raise StorageUnavailable() from exc

        return await anyio.to_thread.run_sync(guarded, limiter=self._limiter)
