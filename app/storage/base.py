"""The storage contract: content-addressed blobs (key = sha256 of the bytes), shared by several rows.

Storage knows nothing of rows: the caller counts references in its database and
deletes an object only when none are left. `put_*` of an object that already exists
refreshes its modification time, so an orphan sweeper that spares recently modified
objects never removes one that was reused while its last reference was being dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol
from urllib.parse import quote

UNAVAILABLE_MESSAGE = "File storage is unavailable, please retry shortly."

SHA256_RE = re.compile(r"[0-9a-f]{64}")
# token "/" token (RFC 9110), no parameters: nothing that could smuggle a header or a second value.
_MIME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*", re.ASCII)
_MAX_MIME = 100
# Types a browser may execute or render as a document with script; never served as such.
_ACTIVE_MIME_PARTS = ("html", "xml", "javascript", "ecmascript", "svg")
# Control characters end a header (CR/LF) or confuse parsers; quotes and backslashes would
# break out of the quoted-string in Content-Disposition; bidi controls disguise the extension.
_UNSAFE_NAME_CHARS = re.compile(r'[\x00-\x1f\x7f-\x9f"\\\u200e\u200f\u2028-\u202e\u2066-\u2069]')
_MAX_NAME = 200


class StorageError(Exception):
    """A storage failure; ``str(exc)`` is one line that is safe to show a user."""


class StorageUnavailable(StorageError):
    """The backend could not be reached or refused us (down, timed out, access denied, bucket missing)."""

    def __init__(self, message: str = UNAVAILABLE_MESSAGE) -> None:
        super().__init__(message)


class ObjectMissing(StorageError, KeyError):
    """No object under that key."""

    def __init__(self, key: str) -> None:
        super().__init__("The stored file is missing.")
        self.key = key

    # KeyError would repr() the message; keep the plain line promised by StorageError.
    __str__ = Exception.__str__


@dataclass(frozen=True)
class PutResult:
    key: str
    created: bool


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: datetime


class Storage(Protocol):
    backend: str

    def key_for(self, sha256: str) -> str: ...
    async def put_file(self, path: Path, sha256: str) -> PutResult: ...
    async def put_bytes(self, data: bytes) -> PutResult: ...
    async def exists(self, key: str) -> bool: ...
    # The object's size and last modification (a reuse refreshes it), or None when it is absent.
    async def info(self, key: str) -> ObjectInfo | None: ...
    async def delete(self, key: str) -> None: ...
    async def download_url(self, key: str, *, file_name: str, content_type: str, ttl: int) -> str: ...
    # The scheme://host[:port] every download link points at (a widget that opens links declares it).
    def link_origin(self) -> str: ...
    async def list_objects(self) -> list[ObjectInfo]: ...
    async def read(self, key: str) -> bytes: ...
    # Remove what interrupted writes left (local temp files, S3 incomplete multipart uploads) older than
    # ``older_than`` seconds; returns how many.
    async def sweep_partial(self, older_than: float) -> int: ...
    async def aclose(self) -> None: ...


def validate_sha(sha256: str) -> str:
    if not isinstance(sha256, str) or not SHA256_RE.fullmatch(sha256):
        raise ValueError("sha256 must be 64 lowercase hexadecimal characters")
    return sha256


def object_key(prefix: str, sha256: str) -> str:
    validate_sha(sha256)
    return f"{prefix}objects/{sha256[:2]}/{sha256}"


def sha_of_key(prefix: str, key: str) -> str:
    """The sha256 named by one of our keys; anything else (a foreign or crafted key) is a ValueError."""
    sha = key.rsplit("/", 1)[-1] if isinstance(key, str) else ""
    if not SHA256_RE.fullmatch(sha) or key != f"{prefix}objects/{sha[:2]}/{sha}":
        raise ValueError("not a storage key of this namespace")
    return sha


def is_plausible_mime(content_type: str) -> bool:
    return len(content_type) <= _MAX_MIME and _MIME_RE.fullmatch(content_type) is not None


def served_content_type(content_type: str) -> str:
    """What a download link may declare: active types become an opaque download."""
    lowered = content_type.lower()
    if any(part in lowered for part in _ACTIVE_MIME_PARTS):
        return "application/octet-stream"
    return content_type


def check_link_request(content_type: str, ttl: int) -> None:
    if not is_plausible_mime(content_type):
        raise ValueError("content_type must be a plain MIME type such as application/pdf")
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0:
        raise ValueError("ttl must be a positive number of seconds")


def safe_file_name(file_name: str) -> str:
    cleaned = _UNSAFE_NAME_CHARS.sub("", file_name).strip()[:_MAX_NAME]
    return cleaned or "download"


def content_disposition(file_name: str) -> str:
    """``attachment`` with an ASCII fallback name and, when needed, the RFC 5987 UTF-8 name (RFC 6266)."""
    name = safe_file_name(file_name)
    fallback = "".join(c if " " <= c <= "~" else "_" for c in name)
    if fallback == name:
        return f'attachment; filename="{name}"'
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
