"""structlog setup: JSON lines in production, coloured console in development.

stdlib loggers (uvicorn, sqlalchemy, the mcp SDK) are routed through the same
processor chain so every line has one shape and carries the bound context
(request id, JSON-RPC method, widget session, ...).
"""

from __future__ import annotations

import itertools
import json
import logging
import logging.config
import os
import threading
from collections import deque
from typing import Any

import structlog

# Keys that must never reach a log line, wherever they were bound.
REDACTED_KEYS = frozenset(
    {"authorization", "access_token", "refresh_token", "token", "password", "user_location", "userLocation",
     "openai/userLocation", "cookie", "client_secret", "code_verifier"}
)


def _redact(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    for key in REDACTED_KEYS.intersection(event_dict):
        event_dict[key] = "[redacted]"
    return event_dict


def _add_pid(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
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

    def __call__(self, _: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
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


def configure_logging(log_format: str = "console", level: str = "INFO", recent: RecentEvents | None = None) -> None:
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_pid,
        _redact,
        *([recent] if recent is not None else []),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {
                "structlog": {
                    "()": structlog.stdlib.ProcessorFormatter,
                    "processors": [
                        structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                        structlog.processors.format_exc_info,
                        renderer,
                    ],
                    "foreign_pre_chain": shared,
                }
            },
            "handlers": {"default": {"class": "logging.StreamHandler", "formatter": "structlog"}},
            "root": {"handlers": ["default"], "level": level.upper()},
            "loggers": {
                # uvicorn's access log duplicates our own http.request event.
                "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
                "uvicorn.error": {"handlers": [], "propagate": True},
                "uvicorn": {"handlers": [], "propagate": True},
                "httpx": {"level": "WARNING"},
                # psycopg sets its own logger to WARNING on import; hold it to the chosen level.
                "psycopg": {"level": max(level.upper(), "WARNING", key=logging.getLevelName)},
                "sqlalchemy.engine": {"level": "WARNING"},
                "alembic": {"level": "WARNING"},
                # One line per stateless request ("Terminating session: None") is noise.
                "mcp.server.streamable_http_manager": {"level": "WARNING"},
                "mcp.server.streamable_http": {"level": "WARNING"},
            },
        }
    )
    structlog.configure(
        # filter_by_level first: a disabled event costs one level check, not the whole chain.
        processors=[structlog.stdlib.filter_by_level, *shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
