"""A real OTLP/HTTP trace receiver on a loopback port, for tests: ``POST /v1/traces`` with a protobuf
``ExportTraceServiceRequest`` (gzip or not), decoded with the OpenTelemetry protocol's own classes, and
answered as a collector answers. What arrives is kept as plain ``Span`` records."""

from __future__ import annotations

import gzip
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.serving import answering


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int  # the protocol's SpanKind: 2 server, 3 client, 1 internal
    attributes: dict[str, Any]
    service: str


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class _Handler(BaseHTTPRequestHandler):
    server: OtlpReceiver

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            service = next((_value(a.value) for a in resource_spans.resource.attributes if a.key == "service.name"),
                           "")
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    spans.append(Span(s.trace_id.hex(), s.span_id.hex(), s.parent_span_id.hex(), s.name, s.kind,
                                      {a.key: _value(a.value) for a in s.attributes}, service))
        with self.server.lock:
            self.server.spans.extend(spans)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class OtlpReceiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[Span] = []
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def trace(self, trace_id: str, *, until: Any = None, timeout: float = 15.0) -> list[Span]:
        """The spans of one trace received so far, once ``until(spans)`` holds (or the timeout passes)."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                spans = [s for s in self.spans if s.trace_id == trace_id]
            if (until is None and spans) or (until is not None and until(spans)) or time.monotonic() > deadline:
                return spans
            time.sleep(0.05)  # polling what another process exports in batches, not a test delay


def otlp_receiver() -> AbstractContextManager[OtlpReceiver]:
    return answering(OtlpReceiver())
