"""File rows, per account or anonymous. Functions of a unit of work; they never commit.

Storage objects are content-addressed and may be shared by rows, so a service that deletes rows returns the
storage keys those rows used; the caller deletes the objects that no row references any more
(``unreferenced``), after the transaction committed.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from app.db import UnitOfWork
from app.feature import LocalAccounts, PrivateDocuments, require_account
from app.features.files.models import StoredFile
from app.features.files.repository import FileRepository
from app.mcp.errors import ToolFailure
from app.wording import Wording

say = Wording(__file__)
MAX_FILES_PER_ACCOUNT = 1000
MAX_NAME = 255
SEARCH_SOURCE = "files"


class LibraryFull(ToolFailure):
    advice = "Ask the user which file to delete (delete_file) first."

    def __init__(self, limit: int = MAX_FILES_PER_ACCOUNT) -> None:
        super().__init__(say("The library already holds {limit} files, the most it keeps.",
                             limit=limit))
        self.limit = limit


@dataclass(frozen=True)
class Upload:
    """What the ingest step learned about a fetched file, ready to be recorded."""

    owner: str | None
    openai_file_id: str
    file_name: str
    claimed_mime_type: str | None
    mime_type: str
    analysis_kind: str
    size: int
    sha256: str
    storage_key: str
    summary: str
    text: str


@dataclass(frozen=True)
class Report:
    file_name: str
    size: int
    sha256: str
    storage_key: str


@dataclass(frozen=True)
class FileRow:
    """A row as plain data (ORM objects do not outlive their unit of work)."""

    id: str
    owner: str | None
    kind: str
    parent_id: str | None
    file_name: str
    claimed_mime_type: str | None
    mime_type: str
    analysis_kind: str
    size: int
    sha256: str
    storage_key: str
    summary: str
    created_at: int
    expires_at: int | None

    @classmethod
    def of(cls, row: StoredFile) -> FileRow:
        return cls(row.id, row.owner, row.kind, row.parent_id, row.file_name, row.claimed_mime_type, row.mime_type,
                   row.analysis_kind, row.size, row.sha256, row.storage_key, row.summary, row.created_at,
                   row.expires_at)

    @property
    def saved(self) -> bool:
        return self.owner is not None


@dataclass(frozen=True)
class Recorded:
    upload: FileRow
    report: FileRow
    reused: bool  # the account already had this content: its existing rows are returned, nothing new recorded


def new_id() -> str:
    return "file_" + secrets.token_hex(12)


def document_id(file_id: str) -> str:
    return f"file:{file_id}"


def iso(ts: int | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def record(uow: UnitOfWork, upload: Upload, report: Report, *, now: int, anon_ttl: int,
           documents: PrivateDocuments | None, ids: tuple[str, str] | None = None,
           accounts: LocalAccounts | None = None) -> Recorded:
    """Record an upload and its report. A signed-in owner keeps the file (and finds its text through search);
    an anonymous upload expires after ``anon_ttl`` seconds. The same content uploaded again by the same account
    returns the rows already there."""
    files = uow.repository(FileRepository)
    if upload.owner is not None:
        existing = files.upload_with_content(upload.owner, upload.sha256, now)
        if existing is not None:
            existing_report = files.report_of(existing.id)
            if existing_report is not None:
                return Recorded(FileRow.of(existing), FileRow.of(existing_report), reused=True)
        # Deleted while the file was fetched and analysed: nothing new is kept for it.
        require_account(accounts, uow, upload.owner)
        if files.count_uploads(upload.owner, now) >= MAX_FILES_PER_ACCOUNT:
            raise LibraryFull()
    expires = None if upload.owner is not None else now + anon_ttl
    upload_id, report_id = ids or (new_id(), new_id())
    parent = StoredFile(
        id=upload_id, owner=upload.owner, kind="upload", parent_id=None, openai_file_id=upload.openai_file_id,
        file_name=upload.file_name[:MAX_NAME], claimed_mime_type=(upload.claimed_mime_type or None),
        mime_type=upload.mime_type, analysis_kind=upload.analysis_kind, size=upload.size, sha256=upload.sha256,
        storage_key=upload.storage_key, summary=upload.summary, created_at=now, expires_at=expires)
    files.add(parent)
    files.flush()  # the report's foreign key needs its parent first
    child = StoredFile(
        id=report_id, owner=upload.owner, kind="report", parent_id=parent.id, openai_file_id=None,
        file_name=report.file_name[:MAX_NAME], claimed_mime_type=None, mime_type="application/json",
        analysis_kind="json", size=report.size, sha256=report.sha256, storage_key=report.storage_key,
        summary=f"Analysis report of {parent.file_name}", created_at=now, expires_at=expires)
    files.add(child)
    files.flush()
    if upload.owner is not None and documents is not None and upload.text.strip():
        documents.put(uow, id=document_id(parent.id), owner=upload.owner, title=parent.file_name,
                      url=f"files:{parent.id}", body=upload.text, source=SEARCH_SOURCE)
    return Recorded(FileRow.of(parent), FileRow.of(child), reused=False)


def library(uow: UnitOfWork, owner: str, *, now: int, limit: int) -> tuple[list[FileRow], int]:
    files = uow.repository(FileRepository)
    return [FileRow.of(r) for r in files.uploads(owner, now, limit)], files.count_uploads(owner, now)


def kept(uow: UnitOfWork, owner: str, file_id: str, *, now: int) -> tuple[FileRow, FileRow] | None:
    """One of ``owner``'s uploads and its analysis report; None when the account has no such
    file."""
    files = uow.repository(FileRepository)
    row = files.owned(owner, file_id, now)
    if row is None or row.kind != "upload":
        return None
    report = files.report_of(row.id)
    return (FileRow.of(row), FileRow.of(report)) if report is not None else None


Removed = list[tuple[str, int]]  # (storage key, created_at) of each deleted row


def remove(uow: UnitOfWork, owner: str, file_id: str, *, now: int,
           documents: PrivateDocuments | None) -> Removed | None:
    """Delete one of ``owner``'s uploads with its reports and its search document; what they used, or None when
    the account has no such file."""
    row = uow.repository(FileRepository).owned(owner, file_id, now)
    if row is None or row.kind != "upload":
        return None
    return remove_ids(uow, [row.id], documents=documents)


def remove_ids(uow: UnitOfWork, ids: list[str], *, documents: PrivateDocuments | None) -> Removed:
    """Delete these rows with their reports and search documents; what they used."""
    files = uow.repository(FileRepository)
    rows = files.with_children(ids)
    files.delete(ids)
    if documents is not None:
        documents.remove(uow, [document_id(i) for i in ids])
    return [(r.storage_key, r.created_at) for r in rows]


def forget_owner(uow: UnitOfWork, owner: str, *, documents: PrivateDocuments | None) -> int:
    """Every file of ``owner``, its reports and search documents (an account being deleted); the
    objects no row points at any more are the sweep's to remove (``files sweep``)."""
    ids = uow.repository(FileRepository).owned_ids(owner)
    return len(remove_ids(uow, ids, documents=documents))


def expire(uow: UnitOfWork, *, now: int, limit: int, documents: PrivateDocuments | None) -> tuple[int, Removed]:
    """Delete up to ``limit`` expired rows (with their reports); how many, and what they used."""
    ids = [r.id for r in uow.repository(FileRepository).expired(now, limit)]
    return len(ids), remove_ids(uow, ids, documents=documents)


def library_full(uow: UnitOfWork, owner: str, *, now: int) -> bool:
    return uow.repository(FileRepository).count_uploads(owner, now) >= MAX_FILES_PER_ACCOUNT


def unreferenced(uow: UnitOfWork, keys: list[str]) -> list[str]:
    """The keys no row points at: their objects may be deleted."""
    used = uow.repository(FileRepository).referenced(keys)
    return [k for k in dict.fromkeys(keys) if k not in used]
