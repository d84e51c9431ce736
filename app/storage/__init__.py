"""Bytes at rest: content-addressed blobs behind the `Storage` protocol (local disk or S3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.storage.base import ObjectInfo, ObjectMissing, PutResult, Storage, StorageError, StorageUnavailable
from app.storage.local import LocalStorage

if TYPE_CHECKING:
    from app.storage.s3 import S3Storage

__all__ = ["LocalStorage", "ObjectInfo", "ObjectMissing", "PutResult", "S3Storage", "Storage", "StorageError",
           "StorageUnavailable"]


def __getattr__(name: str) -> Any:
    # boto3 is imported only by deployments that use S3 (it is slow to import and optional).
    if name == "S3Storage":
        from app.storage.s3 import S3Storage

        return S3Storage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
