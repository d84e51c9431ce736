"""structlog setup: JSON lines in production, coloured console in development.

stdlib loggers (uvicorn, sqlalchemy, the mcp SDK) are routed through the same
processor chain so every line has one shape and carries the bound context
(request id, JSON-RPC method, widget session, ...).
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import logging.config
import logging.handlers
import multiprocessing.util
import os
import queue
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, Any

import structlog
from opentelemetry import trace
from pydantic_core import to_json
from starlette.requests import ClientDisconnect
from structlog.typing import EventDict

# Keys that must never reach a log line, wherever they were bound.
REDACTED_KEYS = frozenset(
    {"authorization", "access_token", "refresh_token", "token", "password", "user_location", "userLocation",
     "openai/userLocation", "cookie", "client_secret", "code_verifier"}
)


def _redact(_: Any, __: str, event_dict: EventDict) -> EventDict:
    for key in REDACTED_KEYS.intersection(event_dict):
        event_dict[key] = "[redacted]"
    return event_dict


# Credentials inside text: a library's message ("Issue token {'access_token': 'eyJ…'}"), an exception's, a value
# bound under a name the set above does not know. What the text holds is not known in advance, so what a
# credential looks like is: a compact JWT/JWS/JWE (access tokens, ID tokens, client assertions, signed cookies),
# a value with one of this server's secret prefixes (rt_ refresh tokens, ac_ authorization codes, cs_ client
# secrets), an Authorization header's value (token68, as HTTP clients capitalise the scheme), and the value after
# a credential's name, at the end of a compound one too (``code=…``, ``"password": "…"``, ``csrf_token=…``): up
# to its closing quote when quoted, else to the next space or delimiter. Values shorter than 8 characters are left
# (a status ``code=400``), and so is an error code after ``code``/``token`` (``code: invalid_grant``: a-z and _).
# Signed links and keys by name too: ``sig=`` (this server's local file links), ``X-Amz-Signature=`` and
# ``X-Amz-Security-Token=`` (presigned S3 URLs), ``api_key=``; a separator may be %-encoded (``%3D``, a form
# quoted inside a URL).
_NAMES = ("access_token|refresh_token|id_token|client_secret|client_assertion|assertion|code_verifier|code"
          "|password|passwd|secret|token|session|cookie|set-cookie|sig|signature|credential|api_key|apikey|api-key")
SECRET_TEXT = re.compile(
    r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_.-]+"
    r"|(?:(?<![A-Za-z0-9])|(?<=%3[Dd]))(?:rt|ac|cs)_[A-Za-z0-9_-]{16,}"
    r"|\b(?:Bearer|Basic|DPoP) +[A-Za-z0-9._~+/-]{8,}=*(?![\w\"'=:.~+/-])"
    r"|(?<![A-Za-z0-9])(?P<name>(?i:" + _NAMES + r"))(?P<sep>[\"']?[ \t]*[:=][ \t]*|%3[Dd])"
    r"(?:(?P<quote>[\"'])(?P<quoted>[^\"'\n]{8,})(?P=quote)|(?P<bare>[^\s\"'&,;}\]]{8,}))")
_ERROR_CODE = re.compile(r"[a-z_]+")


def _hide(match: re.Match[str]) -> str:
    name = match.group("name")
    if not name:
        return "[redacted]"
    value = match.group("quoted") or match.group("bare")
    if name.lower().endswith(("code", "token")) and _ERROR_CODE.fullmatch(value):
        return match.group(0)
    quote = match.group("quote") or ""
    return f"{name}{match.group('sep')}{quote}[redacted]{quote}"


def scrub(text: str) -> str:
    """``text`` with every credential-looking value replaced by ``[redacted]``."""
    return SECRET_TEXT.sub(_hide, text)


# Values this module writes itself, in shapes that hold no credential: not scanned (the scan costs about half a
# microsecond a value; a request logs two lines of a dozen values). Not request_id: a client may choose it.
_OWN_VALUES = frozenset({"timestamp", "level", "logger", "trace_id", "span_id"})
_SHORTEST_MATCH = 9  # "eyJa.b" plus its payload: no credential shape above fits in fewer characters


def _may_hold_credential(value: str) -> bool:
    # What each shape above cannot do without; most values (ids, names, paths) have none, and these substring
    # tests cost a fraction of the pattern's scan.
    return ("=" in value or ":" in value or " " in value or "eyJ" in value or "rt_" in value or "ac_" in value
            or "cs_" in value or "%3" in value)


# A nested key holding a credential, any case: the fields above, and the names the text scan knows (but
# "code", which nested data uses for status and error codes).
_NESTED_SECRET_KEYS = frozenset({key.lower() for key in REDACTED_KEYS} | {
    "id_token", "client_assertion", "assertion", "passwd", "secret", "session", "set-cookie", "sig", "signature",
    "credential", "api_key", "apikey", "api-key"})


def _scrubbed(value: Any, depth: int = 0) -> Any:
    """A nested value (a widget event's data, a library's dict) scrubbed like a line: text scanned, and the values
    of keys named as the set above redacted, at any depth up to 8 (deeper: left out)."""
    if type(value) is str:
        return SECRET_TEXT.sub(_hide, value) if len(value) >= _SHORTEST_MATCH and _may_hold_credential(value) \
            else value
    if isinstance(value, str):  # a str of a subclass (app.wording's Said): scrubbed as its text
        return _scrubbed(str(value), depth)
    if isinstance(value, dict):
        if depth >= 8:
            return "[too deep]"
        return {k: "[redacted]" if isinstance(k, str) and k.lower() in _NESTED_SECRET_KEYS else _scrubbed(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return "[too deep]" if depth >= 8 else [_scrubbed(v, depth + 1) for v in value]
    return value


def _scrub_text(_: Any, __: str, event_dict: EventDict) -> EventDict:
    # Every text value of the line, the message and a formatted exception included (after format_exc_info).
    for key, value in event_dict.items():
        kind = type(value)
        if kind is not str and isinstance(value, str):
            # A str of a subclass (app.wording's Said: a sentence holding a caller's words) is
            # scanned as plain text, and written as one.
            value = event_dict[key] = str(value)
            kind = str
        if kind is str:
            if len(value) >= _SHORTEST_MATCH and key not in _OWN_VALUES and key[0] != "_" \
                    and _may_hold_credential(value):
                event_dict[key] = SECRET_TEXT.sub(_hide, value)
        elif kind is not int and kind is not float and isinstance(value, dict | list | tuple) and key[0] != "_":
            event_dict[key] = _scrubbed(value)
    return event_dict


def _add_pid(_: Any, __: str, event_dict: EventDict) -> EventDict:
    # With several uvicorn workers, the pid tells which process served a request.
    event_dict.setdefault("pid", os.getpid())
    return event_dict


class RecentEvents:
    """The last events that carry a widget session id, kept in memory for the dev host page.

    A structlog processor (after redaction, so it holds only what a log line may hold).
    Development only: one process's memory, bounded, gone on restart.
    """

    def __init__(self, capacity: int = 5000) -> None:
        self._events: deque[dict[str, Any]] = deque(maxlen=capacity)
        self._seq = itertools.count(1)
        # Events are appended from the event loop and from worker threads (sync tools, the SDK).
        self._lock = threading.Lock()

    def __call__(self, _: Any, __: str, event_dict: EventDict) -> EventDict:
        if event_dict.get("widget_session_id"):
            # A JSON copy (anything else as text): the dev page reads it, and later mutation of the
            # event's values must not change what was recorded.
            entry = json.loads(json.dumps({k: v for k, v in event_dict.items() if not k.startswith("_")},
                                          default=str))
            with self._lock:
                entry["seq"] = next(self._seq)
                self._events.append(entry)
        return event_dict

    def for_widget_session(self, widget_session_id: str, after: int = 0) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self._events if e["seq"] > after and e.get("widget_session_id") == widget_session_id]


GIVE_UP_S = 2.0  # how long the end of a process (or a test's flush) waits for a stuck stream


class LogWriter(logging.handlers.QueueListener):
    """Log lines go into a bounded queue; this listener's thread writes them to the stream in batches.

    Logging from the event loop then costs a queue put: it never waits on the stream (a slow log
    collector, a full pipe) and takes no lock another worker could hold. Every worker has its own
    queue and thread, which wakes at most every ``interval`` seconds and writes what has gathered in
    one write. When ``capacity`` lines are waiting, or the stream refuses a batch, lines are dropped
    and counted, and the count is written as a ``log.dropped`` line once the stream takes lines again:
    losing lines beats stalling requests. ``close()`` writes what is left (giving a stuck stream two
    seconds); ``configure_logging`` calls it at interpreter exit and when a uvicorn worker ends.

    The standard library's listener, with its documented hooks: ``dequeue`` waits out the interval,
    ``handle`` writes the batch.
    """

    # QueueListener's end-of-queue marker (None), which its thread looks for: a class attribute that
    # typeshed leaves out, declared here so the checker knows it.
    _sentinel: None

    def __init__(self, stream: IO[str] | None = None, *, capacity: int = 50_000, interval: float = 0.02,
                 sync: bool = False) -> None:
        # A SimpleQueue (C, no locks of Python's: a put costs a tenth of queue.Queue's), held to ``capacity`` by put.
        # Kept as _lines too: QueueListener's name for it is typed as a queue of get and put only.
        self._lines: queue.SimpleQueue[Any] = queue.SimpleQueue()
        super().__init__(self._lines)
        self._stream = stream  # None: whatever sys.stderr is when a batch is written
        self.capacity = capacity
        self.interval = interval
        self._dropped = 0
        self._drop_lock = threading.Lock()  # taken only when lines are dropped, never on the normal path
        self._write_lock = threading.Lock()  # a sync line and the thread's batch never interleave
        self._stopping = threading.Event()  # cuts the thread's wait short: it writes what it has and stops
        self._stop_seen = False  # a drain took the sentinel: the thread stops after its batch
        self._stuck = False  # a write gave up on the stream: the next lines do not wait for it
        # sync: every line written as it is logged, by the caller (tests, whose capture ends with each test).
        self._sync = sync
        if not sync:
            self.start()

    def put(self, line: str) -> None:
        if self._sync:  # a stream found stuck is not waited on again until it has taken a write
            self._write([line], timeout=0 if self._stuck else GIVE_UP_S)
            return
        if self._lines.qsize() >= self.capacity:
            self._count_dropped(1)
        else:
            self._lines.put_nowait(line)

    def flush(self) -> None:
        """Write everything logged so far, now, in order (tests): the thread writes up to the sentinel, and a new
        one takes over (once the stream moves, if it is stuck past ``GIVE_UP_S``: this returns then)."""
        if not self._sync:
            self._stopped_within(GIVE_UP_S, restart=True)

    def write_through(self) -> None:
        """From now on write each line as it is logged, after what is queued: for the end of a process that may
        be ended by a signal (a uvicorn worker re-raises SIGTERM once it has drained), whose writer thread would
        not get to write the last lines. A stuck stream gets ``GIVE_UP_S`` in all; what it would not take is
        counted as dropped."""
        if self._sync:
            return
        deadline = time.monotonic() + GIVE_UP_S
        self._stopped_within(GIVE_UP_S)
        # What was queued after the thread's last batch goes before any line logged from now on.
        if not self._write_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            self._sync = self._stuck = True
            self._count_dropped(len(self._drain()))  # the stream is stuck in the thread's write
            return
        try:
            self._sync = True
            self._write_locked(self._drain())
        finally:
            self._write_lock.release()

    def close(self) -> None:
        self.write_through()

    def _stopped_within(self, seconds: float, restart: bool = False) -> bool:
        """Stop the thread (it writes what is queued, then ends), and with ``restart`` start a new one; False if
        that is still under way after ``seconds`` (a stuck stream: it goes on when the stream moves)."""
        def stop() -> None:
            self.stop()
            if restart:
                self._stopping.clear()
                self.start()

        self._stopping.set()
        stopper = threading.Thread(target=stop, name="log-writer-stop", daemon=True)
        stopper.start()
        stopper.join(timeout=seconds)
        return not stopper.is_alive()

    # QueueListener's hooks
    def dequeue(self, block: bool) -> Any:
        if not self._stop_seen:
            self._stopping.wait(self.interval)  # lines gather meanwhile: one write for all of them
        if self._stop_seen:  # a drain took the sentinel out of the queue
            self._stop_seen = False
            return self._sentinel
        return self._lines.get(block)

    def handle(self, record: Any) -> None:
        with self._write_lock:
            self._write_locked([record, *self._drain()])

    def enqueue_sentinel(self) -> None:
        # Past the capacity, which holds for lines only: the end always gets in.
        self._lines.put(self._sentinel)

    def _drain(self) -> list[str]:
        lines = []
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return lines
            if line is self._sentinel:  # stop() asked: the thread ends after this batch
                self._stop_seen = True
                return lines
            lines.append(line)

    def _count_dropped(self, n: int) -> None:
        with self._drop_lock:
            self._dropped += n
        if _on_dropped is not None:
            _on_dropped(n)

    def _write(self, batch: list[str], timeout: float = -1) -> None:
        if not self._write_lock.acquire(timeout=timeout):  # a stream stuck in another write: these are dropped
            self._stuck = True
            self._count_dropped(len(batch))
            return
        try:
            self._write_locked(batch)
            self._stuck = False
        finally:
            self._write_lock.release()

    def _write_locked(self, batch: list[str]) -> None:
        with self._drop_lock:
            dropped, self._dropped = self._dropped, 0
        if dropped:
            batch.append(json.dumps({"event": "log.dropped", "level": "warning", "logger": "app.logging",
                                     "count": dropped, "pid": os.getpid(),
                                     "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z")}))
        if not batch:
            return
        stream = self._stream if self._stream is not None else sys.stderr
        try:
            try:
                stream.write("\n".join(batch) + "\n")
            except UnicodeEncodeError:  # a stream that is not UTF-8: escape what it cannot take
                encoding = getattr(stream, "encoding", None) or "ascii"
                stream.write("\n".join(line.encode(encoding, "backslashreplace").decode(encoding)
                                       for line in batch) + "\n")
            stream.flush()
        except (OSError, ValueError):  # the stream is gone or closed: count what it did not take
            with self._drop_lock:
                self._dropped += dropped  # not new: still to be reported by the next batch that is written
            self._count_dropped(len(batch) - (1 if dropped else 0))


class _WriterLogger:
    """structlog's final logger: hands the rendered line to the current writer.

    Looked up per line, not bound: structlog caches loggers on first use, and a later
    ``configure_logging`` (tests, the worker after the supervisor) replaces the writer.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def msg(self, line: str) -> None:
        if _writer is not None:
            _writer.put(line)

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


class _DropClientDisconnects(logging.Filter):
    """A client that left (or was cut off) mid-request is not the server's error: the SDK logs it with a
    traceback ("Error handling POST request"); the access log says 499 instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], ClientDisconnect))


class _QueuedLines(logging.handlers.QueueHandler):
    """The stdlib side (uvicorn, SQLAlchemy, the SDK): each record formatted by structlog where it is logged (so it
    carries that request's bound fields), and queued as its line for the writer (bounded: ``LogWriter.put``)."""

    def __init__(self, writer: LogWriter) -> None:
        super().__init__(writer.queue)
        self.writer = writer

    def prepare(self, record: logging.LogRecord) -> Any:
        return self.format(record)

    def enqueue(self, record: Any) -> None:
        self.writer.put(record)


def _add_logger_name(logger: Any, _: str, event_dict: EventDict) -> EventDict:
    name = getattr(logger, "name", None)
    if name:
        event_dict.setdefault("logger", name)
    return event_dict


def _at_level(_: Any, method: str, event_dict: EventDict) -> EventDict:
    # A processor rather than a filtering logger class: cached loggers follow a later configure_logging.
    if _LEVELS.get(method, logging.INFO) < _threshold:
        raise structlog.DropEvent
    return event_dict


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING,
           "error": logging.ERROR, "exception": logging.ERROR, "critical": logging.CRITICAL,
           "fatal": logging.CRITICAL}
_threshold = logging.INFO


def _to_json(obj: Any, **_: Any) -> str:
    # pydantic-core's serializer (already a dependency): several times faster than json.dumps here.
    try:
        return to_json(obj, fallback=repr).decode()
    except ValueError:  # e.g. bytes that are not UTF-8: the slower encoder takes anything
        return json.dumps(obj, default=repr)


_writer: LogWriter | None = None
_on_dropped: Callable[[int], None] | None = None


def on_dropped_lines(count: Callable[[int], None] | None) -> None:
    """Call ``count(n)`` whenever n log lines are dropped (the metrics' counter), from whichever thread drops."""
    global _on_dropped
    _on_dropped = count


def _close_writer() -> None:
    if _writer is not None:
        _writer.close()


def write_through() -> None:
    """The current writer writes each line as it is logged from now on (see ``LogWriter.write_through``)."""
    if _writer is not None:
        _writer.write_through()


def _add_trace_context(_: Any, __: str, event_dict: EventDict) -> EventDict:
    # The innermost span of the line's context: the HTTP server span (ended already by the access log's line,
    # still the request's), the SDK's MCP span, a query. A non-recording span is none of ours: with tracing off
    # (or sampled out), the caller's own context taken from a request _meta traceparent; its trace id is the
    # line's, its span id is not. The access log binds the traceparent header's trace id itself.
    span = trace.get_current_span()
    context = span.get_span_context()
    if context.is_valid:
        event_dict["trace_id"] = format(context.trace_id, "032x")
        if not isinstance(span, trace.NonRecordingSpan):
            event_dict["span_id"] = format(context.span_id, "016x")
    return event_dict


def _record_recent(logger: Any, method: str, event_dict: EventDict) -> EventDict:
    return _recent(logger, method, event_dict) if _recent is not None else event_dict


def _render(logger: Any, method: str, event_dict: EventDict) -> str:
    return _renderer(logger, method, event_dict)


_recent: RecentEvents | None = None
_renderer: Any = structlog.dev.ConsoleRenderer(colors=False)
# The same objects at every configure_logging: structlog caches a logger's chain on first use, so what
# changes (writer, level, format, recent events) is read from the module state above, per line.
_SHARED: list[Any] = [structlog.contextvars.merge_contextvars, _add_trace_context, structlog.processors.add_log_level,
                      structlog.processors.TimeStamper(fmt="iso", utc=True), _add_pid, _redact]
# After the exception is text: its message is scrubbed too, and the dev page's copy holds only what a line may.
_FINAL: list[Any] = [structlog.processors.format_exc_info, _scrub_text, _record_recent, _render]

# Libraries that print credentials at debug level, held to info whatever APP_LOG_LEVEL says: authlib logs every
# token it issues ("Issue token {...}") and client reprs; httpcore (and the SDK's httpcore2/httpx2) the headers
# of outbound responses (the upstream token exchange, S3); botocore and urllib3 signed requests with session
# tokens; python-multipart form fields. The text scrubber above is the second line, for what a library prints at
# info or above.
CREDENTIAL_LOGGERS = ("authlib", "httpcore", "httpcore2", "httpx2", "botocore", "boto3", "s3transfer", "urllib3",
                      "python_multipart", "multipart", "joserfc")


def configure_logging(log_format: str = "console", level: str = "INFO", recent: RecentEvents | None = None,
                      stream: IO[str] | None = None, sync: bool = False) -> LogWriter:
    """Route every log line, ours and the libraries', through one writer to ``stream`` (stderr).

    ``sync`` writes each line as it is logged instead of from the writer thread: for tests, whose
    output capture follows the test that logged.
    """
    global _writer, _threshold, _recent, _renderer
    previous, writer = _writer, LogWriter(stream, sync=sync)
    _writer = writer  # before closing the old one: a line logged meanwhile lands in the new buffer
    if previous is not None:
        previous.close()
    else:
        atexit.register(_close_writer)
        # uvicorn's worker processes leave through multiprocessing, which skips atexit but runs these.
        multiprocessing.util.Finalize(None, _close_writer, exitpriority=100)
    _threshold = logging.getLevelName(level.upper())
    # Python's warnings (a library's SecurityWarning on a weak client key, say) as log lines of their own, through
    # the same chain (redaction, JSON), instead of raw text on stderr between the JSON lines.
    logging.captureWarnings(True)
    _recent = recent
    _renderer = (structlog.processors.JSONRenderer(serializer=_to_json) if log_format == "json"
                 else structlog.dev.ConsoleRenderer(colors=False))
    shared = _SHARED
    at_least_info = max(level.upper(), "INFO", key=logging.getLevelName)
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {
                "structlog": {
                    "()": structlog.stdlib.ProcessorFormatter,
                    "processors": [structlog.stdlib.ProcessorFormatter.remove_processors_meta, *_FINAL],
                    "foreign_pre_chain": [structlog.stdlib.add_logger_name, *shared],
                }
            },
            "filters": {"client_disconnects": {"()": _DropClientDisconnects}},
            "handlers": {"default": {"()": _QueuedLines, "writer": writer, "formatter": "structlog",
                                     "filters": ["client_disconnects"]}},
            "root": {"handlers": ["default"], "level": level.upper()},
            "loggers": {
                # uvicorn's access log duplicates our own http.request event.
                "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
                "uvicorn.error": {"handlers": [], "propagate": True},
                "uvicorn": {"handlers": [], "propagate": True},
                "httpx": {"level": "WARNING"},
                # Python's warnings, at warning level even where the rest logs errors only (the one-shot commands).
                "py.warnings": {"level": "WARNING"},
                # psycopg sets its own logger to WARNING on import; hold it to the chosen level.
                "psycopg": {"level": max(level.upper(), "WARNING", key=logging.getLevelName)},
                "sqlalchemy.engine": {"level": "WARNING"},
                "alembic": {"level": "WARNING"},
                # One line per stateless request ("Terminating session: None") is noise.
                "mcp.server.streamable_http_manager": {"level": "WARNING"},
                "mcp.server.streamable_http": {"level": "WARNING"},
                **{name: {"level": at_least_info} for name in CREDENTIAL_LOGGERS},
            },
        }
    )
    # Our own events skip the stdlib machinery (records, handlers, formatter): a disabled level costs
    # nothing, an enabled one is rendered here and handed to the writer.
    structlog.configure(
        processors=[_at_level, _add_logger_name, *shared, *_FINAL],
        logger_factory=lambda *args: _WriterLogger(str(args[0]) if args else ""),
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        cache_logger_on_first_use=True,
    )
    return writer
