"""The files feature's use cases over the shared services (database, storage, outbound guard, limits): take a
file in, reference it, list, delete and sweep.

Taking a file in goes from a URL ChatGPT gave to a recorded, analysed file: fetch (guarded, streamed to disk; see
ingest) -> analyse (in a worker process) -> store (content-addressed) -> record (one transaction) -> answer with
references. Nothing here holds a whole file in memory, and a failure at any step leaves no row without its object
and no object this call created without a row: a failed fetch or upload records nothing; a failed transaction
deletes the objects this call created (the sweeper, ``python -m app files sweep``, is the backstop for a crash).
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import anyio
import anyio.to_thread
import structlog

from app.db import Database, DatabaseUnavailable
from app.feature import Deps, LocalAccounts, PrivateDocuments
from app.features.files import service
from app.features.files.analysis import Analysis, analyze
from app.features.files.analysis.decoding import create_progress_file, read_position
from app.features.files.ingest import (
    SPOOL_PREFIX,
    SPOOL_SUFFIX,
    FileRejected,
    Ingested,
    Spooled,
    claimed_type,
    fetch_to_disk,
    file_name_of,
    quota_refusal,
    report_document,
)
from app.features.files.progress import FileProgress
from app.features.files.settings import FilesSettings, storage_dir_refusal
from app.features.files.slots import AnalysisSlots, MiB
from app.limits import Budget, Caller, Limits, OverLimit, Reservation, current_caller, per_seconds
from app.net.guard import OutboundGuard
from app.storage import Storage, StorageError
from app.wording import Wording

say = Wording(__file__)
log = structlog.get_logger(__name__)
# Orphan objects younger than this may belong to an upload still in flight: the sweeper leaves them alone.
ORPHAN_GRACE = 3600
PROGRESS_POLL_S = (
    0.25  # how often a running analysis's position is read, when the caller asked for progress
)
# A row's objects are stored just before (the upload) or just after (the report) the row's creation time;
# an object modified later than this after it was stored again by another upload.
REUSE_SLACK = 60
SWEEP_BATCH = 500


@dataclass
class FileUseCases:
    """The files feature's use cases over the shared services; one per app."""

    db: Database
    storage: Storage
    guard: OutboundGuard
    documents: PrivateDocuments | None
    max_bytes: int
    fetch_timeout: float
    anon_ttl: int
    url_ttl: int
    limits: Limits = field(default_factory=Limits.in_process)
    # Bytes an anonymous caller may store per anon_ttl (its address and all anonymous callers: scaled).
    anon_quota: int = 50 * 1024 * 1024
    clock: Callable[[], float] = field(default=time.time)
    # Where fetched bodies are written while they are analysed and stored; a process killed meanwhile leaves its
    # file here, for the sweeper.
    spool_dir: Path | None = None
    # The analysis processes, shared fairly between callers and capped in processor time and memory.
    slots: AnalysisSlots = field(default_factory=lambda: AnalysisSlots(2, 20.0))
    # The built-in authorization server's accounts: a library's owner deleted meanwhile keeps
    # nothing.
    accounts: LocalAccounts | None = None

    @classmethod
    def of(cls, deps: Deps) -> FileUseCases:
        s = deps.part(FilesSettings)
        if (refusal := storage_dir_refusal(deps.settings, s)) is not None:
            raise refusal
        return cls(db=deps.db, storage=deps.storage, guard=deps.guard, documents=deps.documents,
                   max_bytes=s.max_bytes, fetch_timeout=s.fetch_timeout, anon_ttl=s.anon_ttl,
                   url_ttl=s.url_ttl, spool_dir=Path(s.dir) / "spool", limits=deps.limits,
                   anon_quota=s.anon_quota,
                   slots=AnalysisSlots(s.analysis_slots, s.analysis_cpu_seconds,
                                       memory_bytes=s.analysis_memory_mb * MiB),
                   accounts=deps.accounts)

    @property
    def quota(self) -> Budget:
        # One window as long as an anonymous upload is kept: what a caller stored in it is about what it holds.
        return Budget("files.anonymous_bytes", per_seconds(self.anon_quota, self.anon_ttl))

    async def _charge(self, caller: Caller, size: int) -> Reservation:
        try:
            return await self.limits.charge(self.quota, caller, cost=max(1, size))
        except OverLimit as over:
            raise quota_refusal(over) from None

    async def ingest(self, *, download_url: str, openai_file_id: str, file_name: str | None,
                     claimed_mime_type: str | None, owner: str | None,
                     progress: FileProgress | None = None) -> Ingested:
        """``progress``: told how the download and the analysis go, when the caller asked for
        progress."""
        # The caller's share of the analysis processes, before any byte is fetched.
        who = current_caller() or Caller.of(owner, None)
        wanted = progress if progress is not None and progress.wanted else None
        with self.slots.claim(who):
            return await self._ingest(download_url, openai_file_id, file_name, claimed_mime_type,
                                      owner, who, wanted)

    async def _ingest(self, download_url: str, openai_file_id: str, file_name: str | None,
                      claimed_mime_type: str | None, owner: str | None, who: Caller,
                      progress: FileProgress | None) -> Ingested:
        name = file_name_of(file_name, download_url)
        # Before any byte is fetched: a full library, or a used-up anonymous quota, would refuse it at the end.
        caller = None
        if owner is not None:
            now = int(self.clock())
            if await self.db.read(lambda uow: service.library_full(uow, owner, now=now)):
                raise service.LibraryFull()
        else:
            caller = current_caller() or Caller.of(None, None)
            if (over := await self.limits.refusal(self.limits.checks(self.quota, caller))) is not None:
                raise quota_refusal(over)
        if progress is not None:
            progress.next_file()
        spooled = await fetch_to_disk(
            self.guard,
            download_url,
            max_bytes=self.max_bytes,
            deadline_s=self.fetch_timeout,
            spool_dir=self.spool_dir,
            anonymous=owner is None,
            progress=progress,
        )
        reservation: Reservation | None = None
        try:
            # Charged by its real size, before it is analysed or stored; given back if nothing new is kept.
            reservation = await self._charge(caller, spooled.size) if caller is not None else None
            if progress is None:
                analysis = await self._analyse(spooled.path, name, who)
            else:
                analysis = await self._analyse_reporting(spooled, name, who, progress)
            stored = await self.storage.put_file(spooled.path, spooled.sha256)
            created = [stored.key] if stored.created else []
            try:
                upload = service.Upload(
                    owner=owner, openai_file_id=openai_file_id, file_name=name,
                    claimed_mime_type=claimed_type(claimed_mime_type), mime_type=analysis.mime_type,
                    analysis_kind=analysis.kind, size=spooled.size, sha256=spooled.sha256, storage_key=stored.key,
                    summary=analysis.summary, text=analysis.text)
                recorded, report_body = await self._record(upload, analysis, created)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._forget(created)
                raise
            # The rows are committed: from here on a failure is logged, not the caller's error (the sweeper is the
            # backstop for what is left).
            if recorded.reused:  # nothing new was recorded: what this call stored is not needed
                await self._quietly(self._collect(dict.fromkeys(created)))
                if reservation is not None:
                    await reservation.release()
            else:
                await self._quietly(self._restore(recorded, spooled, report_body))
        except BaseException:
            if reservation is not None:
                await reservation.release()
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(functools.partial(spooled.path.unlink, missing_ok=True))
        return Ingested(recorded, analysis)

    @staticmethod
    async def _quietly(step: Awaitable[object]) -> None:
        try:
            await step
        except (StorageError, DatabaseUnavailable) as exc:
            log.warning("files.after_commit_failed", error=type(exc).__name__)

    def _sweep_spool(self, cutoff: float) -> int:
        if self.spool_dir is None or not self.spool_dir.is_dir():
            return 0
        removed = 0
        for path in self.spool_dir.glob(f"{SPOOL_PREFIX}*{SPOOL_SUFFIX}"):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                pass  # finished (and removed) by its upload meanwhile
        return removed

    async def _restore(self, recorded: service.Recorded, spooled: Spooled, report_body: bytes) -> None:
        """After the commit, make sure both objects exist. An object this call found already stored (and only
        refreshed) may have been deleted by a concurrent delete or sweep that saw no row yet; the rows now
        reference it, so no later delete will, and putting it back closes the gap."""
        if not await self.storage.exists(recorded.upload.storage_key):
            log.warning("files.object_restored", kind="upload")
            await self.storage.put_file(spooled.path, spooled.sha256)
        if not await self.storage.exists(recorded.report.storage_key):
            log.warning("files.object_restored", kind="report")
            await self.storage.put_bytes(report_body)

    async def discard(self, rows: list[service.FileRow]) -> None:
        """Undo uploads recorded by a call that failed later (compare_files): their rows, then their objects."""
        ids = [r.id for r in rows]
        removed = await self.db.write(lambda uow: service.remove_ids(uow, ids, documents=self.documents))
        await self._quietly(self._collect(self._own(removed)))

    async def _analyse_reporting(self, spooled: Spooled, name: str, caller: Caller,
                                 progress: FileProgress) -> Analysis:
        """``_analyse``, with how far the analysis process has read the file reported as it goes: it
        writes its position into a file beside the spooled one, which is read here a few times a
        second."""
        # Named as a spooled file is, so that the sweep removes one a crash left behind.
        stem = spooled.path.name.removesuffix(SPOOL_SUFFIX)
        where = spooled.path.with_name(f"{stem}.progress{SPOOL_SUFFIX}")
        try:
            await anyio.to_thread.run_sync(create_progress_file, where)
        except OSError as exc:  # progress is a courtesy: the analysis goes on without it
            log.warning("files.progress_unavailable", error=f"{type(exc).__name__} {exc.errno}")
            return await self._analyse(spooled.path, name, caller)

        async def watch() -> None:
            while True:
                await anyio.sleep(PROGRESS_POLL_S)
                try:
                    position = await anyio.to_thread.run_sync(read_position, where)
                except OSError as exc:
                    log.warning(
                        "files.progress_unavailable", error=f"{type(exc).__name__} {exc.errno}"
                    )
                    return
                await progress.analysed(position, spooled.size)

        # What the analysis raised is raised after the task group: inside it, anyio would wrap it in
        # an ExceptionGroup, which no caller's ``except FileRejected`` catches.
        outcome: list[Analysis | Exception] = []
        try:
            async with anyio.create_task_group() as watching:
                watching.start_soon(watch)
                try:
                    outcome.append(
                        await self._analyse(spooled.path, name, caller, progress_path=where)
                    )
                except Exception as exc:
                    outcome.append(exc)
                finally:
                    watching.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(functools.partial(where.unlink, missing_ok=True))
        if isinstance(result := outcome[0], Exception):
            raise result
        await progress.analysed(spooled.size, spooled.size, done=True)
        return result

    async def _analyse(
        self, path: Path, name: str, caller: Caller, progress_path: Path | None = None
    ) -> Analysis:
        # A worker process: parsing a large file would otherwise hold the GIL against the event loop.
        try:
            analysis = functools.partial(
                analyze,
                path,
                file_name=name,
                memory_bytes=self.slots.memory_bytes,
                progress_path=progress_path,
            )
            return await self.slots.run(caller, analysis)
        except FileRejected:  # busy, or stopped at its processor-time cap
            raise
        except Exception as exc:  # analyze() turns bad content into warnings; this is the worker itself failing
            log.error("files.analysis_failed", error=type(exc).__name__, exc_info=exc)
            raise FileRejected(say("The file could not be analysed (the analysis worker failed); "
                                   "nothing was kept.")) from None

    async def _record(self, upload: service.Upload, analysis: Analysis,
                      created: list[str]) -> tuple[service.Recorded, bytes]:
        # The ids are chosen here, not in the transaction: the report names its upload and is stored before the
        # one transaction that records both rows.
        now = int(self.clock())
        upload_id, report_id = service.new_id(), service.new_id()
        body = report_document(upload_id, upload, analysis)
        stored = await self.storage.put_bytes(body)
        if stored.created:
            created.append(stored.key)
        report = service.Report(file_name=f"{PurePosixPath(upload.file_name).stem or 'file'}-analysis.json",
                                size=len(body), sha256=hashlib.sha256(body).hexdigest(), storage_key=stored.key)
        recorded = await self.db.write(lambda uow: service.record(
            uow, upload, report, now=now, anon_ttl=self.anon_ttl, documents=self.documents,
            ids=(upload_id, report_id), accounts=self.accounts))
        return recorded, body

    async def _forget(self, keys: list[str]) -> None:
        """Remove objects this call created and no committed row references (the transaction failed)."""
        for key in keys:
            try:
                await self.storage.delete(key)
            except Exception as exc:  # the sweeper removes it later; the caller's error is what matters
                log.warning("files.cleanup_failed", key=key, error=type(exc).__name__)

    async def _collect(self, candidates: dict[str, float | None]) -> int:
        """Delete the objects among ``candidates`` (key -> latest modification time at which it may go, or None
        for any time) that no row references. An object modified later was stored again by another upload, which
        may be about to commit its row: it stays, for the sweeper to decide an hour later. Returns how many were
        deleted."""
        if not candidates:
            return 0
        orphans = await self.db.read(lambda uow: service.unreferenced(uow, list(candidates)))
        doomed = []
        for key in orphans:
            bound = candidates[key]
            if bound is not None:
                info = await self.storage.info(key)
                if info is None or info.modified.timestamp() > bound:
                    continue
            doomed.append(key)
        await self._forget(doomed)
        return len(doomed)

    @staticmethod
    def _own(rows: list[tuple[str, int]]) -> dict[str, float | None]:
        """Objects of deleted rows: each may go unless stored again after its newest row was recorded."""
        bounds: dict[str, float | None] = {}
        for key, created_at in rows:
            bound = created_at + REUSE_SLACK
            current = bounds.get(key)
            bounds[key] = bound if current is None else max(current, bound)
        return bounds

    async def reference(self, row: service.FileRow) -> tuple[str, str]:
        """A short-lived download URL for a row, and its MIME type for the response."""
        url = await self.storage.download_url(row.storage_key, file_name=row.file_name, content_type=row.mime_type,
                                              ttl=self.url_ttl)
        return url, row.mime_type

    async def library(self, owner: str, limit: int) -> tuple[list[service.FileRow], int]:
        now = int(self.clock())
        return await self.db.read(lambda uow: service.library(uow, owner, now=now, limit=limit))

    async def kept(self, owner: str, file_id: str,
                   ) -> tuple[service.FileRow, service.FileRow] | None:
        """One of ``owner``'s files with its report row; None when the account has none of that
        id."""
        now = int(self.clock())
        return await self.db.read(lambda uow: service.kept(uow, owner, file_id, now=now))

    async def kept_analysis(self, report: service.FileRow) -> Analysis:
        """The analysis a kept file's report holds (``ingest.report_document``), read back."""
        document = json.loads(await self.storage.read(report.storage_key))["analysis"]
        return Analysis(kind=document["kind"], mime_type=document["mime_type"],
                        summary=document["summary"], details=document["details"],
                        warnings=list(document["warnings"]))

    async def delete(self, owner: str, file_id: str) -> bool:
        now = int(self.clock())
        removed = await self.db.write(lambda uow: service.remove(uow, owner, file_id, now=now,
                                                                 documents=self.documents))
        if removed is None:
            return False
        await self._quietly(self._collect(self._own(removed)))
        return True

    async def sweep(self) -> str:
        """Delete expired rows and their unreferenced objects, then objects no row references (older than an
        hour, so uploads in flight are left alone), then what interrupted writes left behind."""
        now = int(self.clock())
        rows = objects = 0
        while True:
            count, removed = await self.db.write(lambda uow: service.expire(uow, now=now, limit=SWEEP_BATCH,
                                                                            documents=self.documents))
            if not count:
                break
            rows += count
            objects += await self._collect(self._own(removed))
        # Listed once, re-checked object by object: a reuse after the listing refreshes the object's time.
        cutoff = now - ORPHAN_GRACE
        listed = [o.key for o in await self.storage.list_objects() if o.modified.timestamp() < cutoff]
        stray = 0
        for start in range(0, len(listed), SWEEP_BATCH):
            stray += await self._collect(dict.fromkeys(listed[start:start + SWEEP_BATCH], cutoff))
        partial = await self.storage.sweep_partial(ORPHAN_GRACE)
        partial += await anyio.to_thread.run_sync(self._sweep_spool, now - ORPHAN_GRACE)
        return (f"{rows} expired rows removed, {objects} of their objects deleted, {stray} orphan objects deleted, "
                f"{partial} interrupted writes cleaned up")
