"""The steps of taking a file in that hold no state of their own (the use case that runs them is in usecases):
the guarded fetch, streamed into a private temporary file and hashed on the way, never held whole in memory; the
name and claimed type kept for the file; its analysis report; and the words a refusal or a used-up quota is
explained in.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread
import structlog

from app.features.files import service
from app.features.files.analysis import Analysis
from app.features.files.progress import FileProgress
from app.limits import OverLimit, retry_phrase
from app.mcp.errors import ToolFailure
from app.net.guard import OutboundGuard
from app.net.refusals import OutboundRefused
from app.storage.base import is_plausible_mime
from app.wording import Wording

say = Wording(__file__)
log = structlog.get_logger(__name__)
WRITE_BATCH = 1 << 20
SPOOL_PREFIX, SPOOL_SUFFIX = "upload-", ".part"


class FileRejected(ToolFailure):
    """The file could not be taken in; the message tells what happened and what the user can do."""

    advice = ("Tell the user what the message says and what they can do about it; do not call the "
              "tool again with the same file.")

    def concerning(self, which: str) -> FileRejected:
        """The same refusal, saying which of a call's files it was ("File 2 (b.csv): ...")."""
        return FileRejected(say("{which}: {message}", which=which, message=self.message),
                            self.advice or None)


@dataclass(frozen=True)
class Spooled:
    path: Path
    size: int
    sha256: str


@dataclass(frozen=True)
class Ingested:
    recorded: service.Recorded
    analysis: Analysis


def _size(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000} MB"
    return say("{count} bytes", count=f"{n:,}")


# For the model, after a quota refusal: the way past it.
SIGN_IN_ADVICE = "Ask the user to connect (sign in to) this app: its library keeps files without this quota."


def quota_refusal(over: OverLimit) -> FileRejected:
    """What happened, for the person; the way past it (signing in), for the model."""
    hours = over.period / 3600
    if over.period % 360 != 0:
        per = say("{seconds} s", seconds=over.period)
    elif hours == 1:
        per = say("1 hour")
    else:
        per = say("{hours} hours", hours=f"{hours:g}")
    allowed = say("anonymous uploads from {whom} may add at most {size} every {per}",
                  whom=over.label, size=_size(over.amount), per=per)
    if over.cost > over.amount:
        return FileRejected(say("The file was not kept: it is {size}, and {allowed}.",
                                size=_size(over.cost), allowed=allowed), SIGN_IN_ADVICE)
    return FileRejected(say("The file was not kept: {allowed}, and that is used up. It can be "
                            "retried in {wait}.", allowed=allowed,
                            wait=retry_phrase(over.retry_after)), SIGN_IN_ADVICE)


# What an anonymous caller learns of a fetch that failed on the network (a closed, filtered or non-HTTP port, a
# name that does not resolve): the same sentence whatever happened, or the reasons would map someone's network.
GENERIC_REFUSAL = say.mark("The file could not be fetched from {host}: check that its link is a "
                           "public https URL that works.")


def refusal_message(exc: OutboundRefused, cap: int, *, anonymous: bool = False) -> str:
    reason, host = exc.reason, exc.host or say("the file's host")
    if exc.detail or (anonymous and exc.kind not in ("size", "url")):
        # The detail, for the operator: the reason an anonymous caller is not told, what the
        # system said of a failed connection (a person is told it in the server's words).
        log.info("files.fetch_refused", host=host, kind=exc.kind, reason=reason, detail=exc.detail)
    if anonymous and exc.kind not in ("size", "url"):
        return say(GENERIC_REFUSAL, host=host)
    if exc.kind == "size":
        return say("The file is larger than the {size} limit, so it was not analysed.",
                   size=_size(cap))
    if exc.kind == "timeout":
        return say("Fetching the file from {host} timed out ({reason}); try again, or send a "
                   "smaller file.", host=host, reason=reason)
    if exc.kind == "address":
        return say("The file's URL leads to {host}, a private or internal address ({reason}); "
                   "only files on public https hosts are fetched.", host=host, reason=reason)
    if exc.kind == "url":
        return say("The file's URL cannot be fetched: {reason}. Only public https URLs are "
                   "accepted.", reason=reason)
    return say("Could not fetch the file from {host}: {reason}.", host=host, reason=reason)


def claimed_type(value: str | None) -> str | None:
    """The MIME type ChatGPT claimed, if it looks like one (it is only ever shown, never trusted)."""
    value = (value or "").strip()
    return value if value and len(value) <= service.MAX_NAME and is_plausible_mime(value) else None


def file_name_of(name: str | None, url: str) -> str:
    """The name to show and download under: the one ChatGPT gave, else the URL's last path segment."""
    candidate = (name or "").strip() or unquote(PurePosixPath(urlsplit(url).path).name)
    cleaned = "".join(ch for ch in candidate if ch.isprintable() and ch not in '/\\"').strip()
    return cleaned[: service.MAX_NAME] or "file"


def _spool_batch(fd: int, digest: hashlib._Hash, data: bytes) -> None:
    digest.update(data)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _spool_file(spool_dir: Path | None) -> tuple[int, str]:
    if spool_dir is not None:
        spool_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return tempfile.mkstemp(prefix=SPOOL_PREFIX, suffix=SPOOL_SUFFIX, dir=spool_dir)


async def fetch_to_disk(guard: OutboundGuard, url: str, *, max_bytes: int, deadline_s: float,
                        spool_dir: Path | None = None, anonymous: bool = False,
                        progress: FileProgress | None = None) -> Spooled:
    """Stream the body into a private temporary file (in ``spool_dir``, default the system's), hashing it on the
    way; the caller removes the file. ``anonymous``: a refusal says no more than GENERIC_REFUSAL of
    the network.
    ``progress``: told the bytes arrived so far, of the length the response declares."""
    try:
        fd, name = await anyio.to_thread.run_sync(_spool_file, spool_dir)
    except OSError as exc:
        raise _spool_failed(exc) from None
    path, digest, size = Path(name), hashlib.sha256(), 0
    try:
        async with guard.stream(url, max_bytes=max_bytes, total_timeout=deadline_s) as resp:
            if resp.status != 200:
                raise FileRejected(say("The file's server answered HTTP {status}; the download "
                                       "link may have expired.", status=resp.status),
                                   "Ask the user to attach the file again.")
            pending = bytearray()
            declared = _declared_length(resp.headers) if progress is not None else None
            async with aclosing(resp.chunks()) as chunks:
                async for chunk in chunks:
                    pending += chunk
                    size += len(chunk)
                    if progress is not None:
                        await progress.fetched(size, declared)
                    if len(pending) >= WRITE_BATCH:
                        await anyio.to_thread.run_sync(_spool_batch, fd, digest, bytes(pending))
                        pending.clear()
            if pending:
                await anyio.to_thread.run_sync(_spool_batch, fd, digest, bytes(pending))
        await anyio.to_thread.run_sync(os.close, fd)
        fd = -1
        return Spooled(path, size, digest.hexdigest())
    except OutboundRefused as exc:
        with anyio.CancelScope(shield=True):
            await _discard(fd, path)
        raise FileRejected(refusal_message(exc, max_bytes, anonymous=anonymous)) from None
    except OSError as exc:  # the temporary file: disk full, quota, permissions
        with anyio.CancelScope(shield=True):
            await _discard(fd, path)
        raise _spool_failed(exc) from None
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _discard(fd, path)
        raise


def _declared_length(headers: Mapping[str, str]) -> int | None:
    length = headers.get("content-length", "").strip()
    return int(length) if length.isdigit() and len(length) < 16 else None


def _spool_failed(exc: OSError) -> FileRejected:
    log.error("files.spool_failed", error=f"{type(exc).__name__} {exc.errno}")
    return FileRejected(say("The server could not take the file in right now (its temporary "
                            "storage is full or unavailable); try again later."))


async def _discard(fd: int, path: Path) -> None:
    def discard() -> None:
        if fd >= 0:
            os.close(fd)
        path.unlink(missing_ok=True)

    await anyio.to_thread.run_sync(discard)


def report_document(upload_id: str, upload: service.Upload, analysis: Analysis) -> bytes:
    return json.dumps({
        "file": {"id": upload_id, "name": upload.file_name, "size": upload.size, "sha256": upload.sha256,
                 "mime_type": upload.mime_type, "claimed_mime_type": upload.claimed_mime_type},
        "analysis": {"kind": analysis.kind, "mime_type": analysis.mime_type, "summary": analysis.summary,
                     "warnings": analysis.warnings, "details": analysis.details},
    }, ensure_ascii=False, indent=2).encode()
