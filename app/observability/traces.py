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
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

SERVICE_NAME = "chatgpt-mcp-app-server"
SHIPPED_PROTOCOL = "http/protobuf"
OTHER = "_OTHER"
QUERY_KEY = "app.query_string"  # where the query waits while the instrumentation looks at the request
# Attribute values past this are cut (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT overrides): a client's long strings
# (a user agent, a tool argument in an error) never make a span of any size.
ATTRIBUTE_LENGTH = 1024
FLUSH_TIMEOUT_MS = 5000


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


def _named(environ: Mapping[str, str]) -> bool:
    """The operator named the service (else it is ours, not the SDK's ``unknown_service``)."""
    attributes = environ.get("OTEL_RESOURCE_ATTRIBUTES", "")
    return bool(environ.get("OTEL_SERVICE_NAME")) or any(
        pair.split("=", 1)[0].strip() == "service.name" for pair in attributes.split(","))


def _bounded_names() -> Any:
    """A span processor that holds the SDK's MCP span names to this server's own tools and methods: the SDK names
    a span after the method and the tool the client wrote (``tools/call <anything>``), and trace backends index
    span names as they would metric labels. An unknown one is ``_OTHER``, in the name and the attribute. (Built
    here: the OpenTelemetry SDK is imported only when traces are on.)"""
    from opentelemetry.sdk.trace import SpanProcessor

    class BoundedNames(SpanProcessor):
        def __init__(self) -> None:
            self.methods: frozenset[str] = frozenset()
            self.tools: frozenset[str] = frozenset()

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            attributes = span.attributes or {}
            method = attributes.get("mcp.method.name")
            if method is None:
                return
            tool = attributes.get("gen_ai.tool.name")
            known = method if method in self.methods else OTHER
            if tool is not None and tool not in self.tools:
                span.set_attribute("gen_ai.tool.name", OTHER)
                tool = OTHER
            if known != method:
                span.set_attribute("mcp.method.name", OTHER)
            span.update_name(known + (f" {tool}" if tool is not None else ""))

    return BoundedNames()


class Tracing:
    """One worker's tracer provider, and the instrumentation that reports to it."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.botocore import BotocoreInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanLimits, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        limits = (SpanLimits() if environ.get("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
                  or environ.get("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT")
                  else SpanLimits(max_span_attribute_length=ATTRIBUTE_LENGTH))
        self.provider = TracerProvider(
            resource=Resource.create({} if _named(environ) else {"service.name": SERVICE_NAME}), span_limits=limits)
        self._names = _bounded_names()
        self.provider.add_span_processor(self._names)  # first: the exporter sees the bounded names
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        # Global: the SDK's MCP spans and the guard's take their tracer from the global provider.
        trace.set_tracer_provider(self.provider)
        BotocoreInstrumentor().instrument(tracer_provider=self.provider)

    def know(self, *, methods: Iterable[str] = (), tools: Iterable[str] = ()) -> None:
        """The MCP methods and tool names a span may be named after; anything else is ``_OTHER``."""
        self._names.methods |= frozenset(methods)
        self._names.tools |= frozenset(tools)

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
        may carry what a span name must not. The instrumentation never sees the query string (a signed
        download link's ``sig``, an authorization request's ``state``, a file's name): its URL attributes are
        the path's; ``app`` gets the query back."""
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        async def query_restored(scope: Scope, receive: Receive, send: Send) -> None:
            if QUERY_KEY in scope:
                scope["query_string"] = scope.pop(QUERY_KEY)
            await app(scope, receive, send)

        traced = OpenTelemetryMiddleware(query_restored, tracer_provider=self.provider,
                                         exclude_spans=["receive", "send"],
                                         default_span_details=lambda scope: (scope.get("method") or "HTTP", {}))

        async def query_hidden(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope.get("query_string"):
                scope = {**scope, "query_string": b"", QUERY_KEY: scope["query_string"]}
            await traced(scope, receive, send)

        return query_hidden

    def shutdown(self) -> None:
        """Export what is batched (for at most five seconds: a collector that does not answer must not eat the
        shutdown grace), then stop."""
        try:
            self.provider.force_flush(timeout_millis=FLUSH_TIMEOUT_MS)
        finally:
            self.provider.shutdown()


def configure_tracing(environ: Mapping[str, str] = os.environ) -> Tracing | None:
    """This worker's tracing, or None when no OTLP endpoint is set. Call once per process."""
    if refusals := tracing_refusals(environ):
        raise TracingError("\n".join(refusals))
    return Tracing(environ) if tracing_requested(environ) else None
