"""OpenTelemetry traces, configured from the standard ``OTEL_*`` variables, exported over OTLP/HTTP.

Nothing is exported, and nothing is instrumented, unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set: a server without a collector pays for no span.
When it is, each worker process gets a tracer provider with a batching exporter, and one
request is one tree:

    POST /mcp                      the HTTP server span (opentelemetry-instrumentation-asgi), its parent
                                   the request's ``traceparent`` header
      tools/call get_zoo_animals   the SDK's span per MCP message (``OpenTelemetryMiddleware``), its parent
                                   the ``traceparent`` in the request ``_meta`` when there is one
        SELECT ...                 SQLAlchemy (opentelemetry-instrumentation-sqlalchemy)
        GET                        an outbound fetch (app.net.guard, which speaks httpcore: its own span)
        S3.PutObject               boto3 (opentelemetry-instrumentation-botocore)

The exporter, its endpoint, headers, timeout and compression, the sampler
(``OTEL_TRACES_SAMPLER``), the batch sizes and the resource (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``) are the OpenTelemetry SDK's own reading of the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from starlette.types import ASGIApp

SERVICE_NAME = "chatgpt-mcp-app-server"
SHIPPED_PROTOCOL = "http/protobuf"


class TracingError(ValueError):
    """An OTEL_* setting this server cannot honour; the message is one line naming it."""


def tracing_requested(environ: Mapping[str, str] = os.environ) -> bool:
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return False
    return bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))


def tracing_refusals(environ: Mapping[str, str] = os.environ) -> list[str]:
    """What in the environment asks for traces this server cannot send, one line per variable."""
    if not tracing_requested(environ):
        return []
    lines = []
    exporter = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporter != "otlp":
        lines.append(f"OTEL_TRACES_EXPORTER: only otlp (or none) is supported, got {exporter!r}")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(name, "").strip().lower()
        if protocol:
            if protocol != SHIPPED_PROTOCOL:
                lines.append(f"{name}: only {SHIPPED_PROTOCOL} (OTLP over HTTP) is shipped, got {protocol!r}")
            break  # the traces-specific variable wins over the general one
    return lines


class Tracing:
    """One worker's tracer provider, and the instrumentation that reports to it."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.botocore import BotocoreInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        named = "OTEL_SERVICE_NAME" in environ or "service.name=" in environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
        self.provider = TracerProvider(resource=Resource.create({} if named else {"service.name": SERVICE_NAME}))
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        # Global: the SDK's MCP spans and the guard's take their tracer from the global provider.
        trace.set_tracer_provider(self.provider)
        BotocoreInstrumentor().instrument(tracer_provider=self.provider)

    def instrument_engine(self, engine: Any) -> None:
        from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

        # skip_dep_check: the package declares "sqlalchemy < 2.1" and refuses 2.1 outright, though the engine
        # events it listens to are unchanged (tests/e2e/test_observability.py receives its spans). No trace ids
        # are written into the SQL (no commenter).
        SQLAlchemyInstrumentor().instrument(engine=engine, tracer_provider=self.provider, enable_commenter=False,
                                            skip_dep_check=True)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """The HTTP server span around ``app``, its parent the request's ``traceparent``. Named by method only
        here: the route is known once the router has run (the access log renames it then), and the raw path
        may carry what a span name must not (a download link's key)."""
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        return OpenTelemetryMiddleware(app, tracer_provider=self.provider, exclude_spans=["receive", "send"],
                                       default_span_details=lambda scope: (scope.get("method") or "HTTP", {}))

    def shutdown(self) -> None:
        """Export what is batched, then stop (blocking: up to the exporter's timeout)."""
        self.provider.shutdown()


def configure_tracing(environ: Mapping[str, str] = os.environ) -> Tracing | None:
    """This worker's tracing, or None when no OTLP endpoint is set. Call once per process."""
    if refusals := tracing_refusals(environ):
        raise TracingError("\n".join(refusals))
    return Tracing(environ) if tracing_requested(environ) else None
