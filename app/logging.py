"""structlog setup: JSON lines in production, coloured console in development.

stdlib loggers (uvicorn, sqlalchemy, the mcp SDK) are routed through the same
processor chain so every line has one shape and carries the bound context
(request id, JSON-RPC method, widget session, ...).
"""

from __future__ import annotations

import logging
import logging.config
import os
from typing import Any

import structlog

# Keys that must never reach a log line, wherever they were bound.
_REDACTED_KEYS = frozenset(
    {"authorization", "access_token", "refresh_token", "token", "password", "user_location", "userLocation",
     "openai/userLocation", "cookie", "client_secret", "code_verifier"}
)


def _redact(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    for key in _REDACTED_KEYS.intersection(event_dict):
        event_dict[key] = "[redacted]"
    return event_dict


def _add_pid(_: Any, __: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    # With several uvicorn workers, the pid tells which process served a request.
    event_dict.setdefault("pid", os.getpid())
    return event_dict


def configure_logging(log_format: str = "console", level: str = "INFO") -> None:
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_pid,
        _redact,
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
