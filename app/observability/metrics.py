"""Prometheus metrics: the families, the exposition, and the multiprocess bookkeeping of uvicorn workers.

Names follow the OpenTelemetry semantic conventions rendered the Prometheus way (dots become
underscores, the unit a suffix): ``mcp.server.operation.duration`` is
``mcp_server_operation_duration_seconds``. Every label value is drawn from a closed set (the
tools this server has, the methods MCP defines, the routes it serves): a client that calls a
tool or method of its own invention is counted under ``_OTHER``, so it cannot grow the label
space, and with it the memory of every worker and of the scraper.

With several workers (``serve --workers N``) each process writes its samples to memory-mapped
files in one directory (prometheus-client's multiprocess mode) and a scrape, answered by any
worker, adds them up. ``serve`` prepares that directory before the workers start
(``prepare_multiprocess_dir``): the variable must be set before prometheus-client is imported.
uvicorn says nothing when a worker dies, so a scrape first forgets the live gauges of processes
that are gone (``forget_dead_processes``); their counters stay in the sums, as they must.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio.to_thread
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from app.observability.multiprocess import MULTIPROCESS_ENV, forget_dead_processes

log = structlog.get_logger("app.observability")

OTHER = "_OTHER"  # the semantic conventions' value for what is not in the known set
# Bucket boundaries the semantic conventions advise for mcp.server.operation.duration and
# http.server.request.duration.
OPERATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
HTTP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)
HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})
GRANT_TYPES = frozenset({"authorization_code", "refresh_token", "client_credentials"})


@dataclass(frozen=True, slots=True)
class Reading:
    """One gauge value read when scraped (a feature's ``gauges``): how many files are kept, say."""

    name: str
    help: str
    value: float
    labels: Mapping[str, str] = field(default_factory=dict)


class Metrics:
    """Every metric family this server exports, and the one place that bounds their label values."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        # Set by serve (several processes write, a scrape adds them up); None: this process's own registry.
        self.multiprocess_dir = os.environ.get(MULTIPROCESS_ENV) or None
        r = self.registry
        self.operation = Histogram(
            "mcp_server_operation_duration_seconds", "MCP requests handled, by method, tool and error type.",
            ["mcp_method_name", "gen_ai_tool_name", "error_type"], buckets=OPERATION_BUCKETS, registry=r)
        self.http = Histogram(
            "http_server_request_duration_seconds", "HTTP requests served, by method, route and status.",
            ["http_request_method", "http_route", "http_response_status_code"], buckets=HTTP_BUCKETS, registry=r)
        self.sign_ins = Counter("app_sign_ins", "Sign-in form submissions, by outcome.", ["outcome"], registry=r)
        self.token_grants = Counter("app_token_grants", "Token endpoint requests, by grant type and outcome.",
                                    ["grant_type", "outcome"], registry=r)
        self.limit_refusals = Counter("app_limit_refusals", "Requests refused by a limit, by limit.", ["limit"],
                                      registry=r)
        self.db_pool_in_use = Gauge("app_db_pool_connections_in_use", "Database connections checked out now.",
                                    multiprocess_mode="livesum", registry=r)
        self.log_lines_dropped = Counter("app_log_lines_dropped", "Log lines dropped (buffer full or stream gone).",
                                         registry=r)
        self._methods: frozenset[str] = frozenset()
        self._tools: frozenset[str] = frozenset()
        self._readings: list[Callable[[], Iterable[Reading]]] = []

    # --- the closed sets ----------------------------------------------------------------------------
    def know(self, *, methods: Iterable[str] = (), tools: Iterable[str] = ()) -> None:
        """The MCP methods and tool names worth a label of their own; anything else is ``_OTHER``."""
        self._methods |= frozenset(methods)
        self._tools |= frozenset(tools)

    def read_at_scrape(self, read: Callable[[], Iterable[Reading]]) -> None:
        """Gauges read when scraped (run on a worker thread; one that fails is left out of that scrape)."""
        self._readings.append(read)

    # --- observations -------------------------------------------------------------------------------
    def mcp_operation(self, method: str, tool: str | None, error_type: str | None, seconds: float) -> None:
        method = method if method in self._methods else OTHER
        name = "" if tool is None else tool if tool in self._tools else OTHER
        self.operation.labels(method, name, error_type or "").observe(seconds)

    def http_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.http.labels(method if method in HTTP_METHODS else OTHER, route, str(status)).observe(seconds)

    def sign_in(self, outcome: str) -> None:
        self.sign_ins.labels(outcome).inc()

    def token_grant(self, grant_type: str, outcome: str) -> None:
        # Empty: the request named none (or could not be read).
        self.token_grants.labels(grant_type if grant_type in GRANT_TYPES or not grant_type else OTHER, outcome).inc()

    def limit_refused(self, limit: str) -> None:
        self.limit_refusals.labels(limit).inc()

    def watch_pool(self, engine: Any) -> None:
        """Count ``engine``'s connections in use (SQLAlchemy pool events)."""
        from sqlalchemy import event

        event.listen(engine, "checkout", lambda *_: self.db_pool_in_use.inc())
        event.listen(engine, "checkin", lambda *_: self.db_pool_in_use.dec())

    # --- exposition ---------------------------------------------------------------------------------
    def render(self) -> bytes:
        """The Prometheus text of every family (every worker's, in multiprocess mode). Blocking: file reads and
        the scrape-time gauges' queries; call it from a worker thread."""
        sources: list[Any] = [_Readings(self._readings)]
        if self.multiprocess_dir is not None:
            forget_dead_processes(self.multiprocess_dir)
            sources.insert(0, MultiProcessCollector(None, path=self.multiprocess_dir))
        else:
            sources.insert(0, self.registry)
        return generate_latest(_Sources(sources))


class _Sources:
    """What ``generate_latest`` asks of a registry (``collect``), over several collectors."""

    def __init__(self, sources: list[Any]) -> None:
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source.collect()


class _Readings:
    def __init__(self, readers: list[Callable[[], Iterable[Reading]]]) -> None:
        self.readers = readers

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        for read in self.readers:
            started = time.perf_counter()
            try:
                readings = list(read())
            except Exception as exc:  # a database outage must not take the other families with it
                log.warning("metrics.reading_failed", error=type(exc).__name__,
                            duration_ms=round((time.perf_counter() - started) * 1000, 2))
                continue
            for r in readings:
                family = families.get(r.name)
                if family is None:
                    family = families[r.name] = GaugeMetricFamily(r.name, r.help, labels=sorted(r.labels))
                family.add_metric([r.labels[k] for k in sorted(r.labels)], r.value)
        yield from families.values()


# A request that came through a proxy (the public ingress) carries one of these, whatever its peer: the ones
# proxies, load balancers and CDNs add (nginx, Envoy, Cloudflare, Akamai, RFC 7230's Via).
FORWARDING_HEADERS = frozenset({b"x-forwarded-for", b"forwarded", b"x-real-ip", b"via", b"x-forwarded-host",
                                b"x-forwarded-proto", b"x-forwarded-port", b"x-original-forwarded-for",
                                b"true-client-ip", b"cf-connecting-ip", b"x-client-ip", b"x-envoy-external-address"})


def scrape_routes(metrics: Metrics, scrapers: Iterable[str]) -> list[Route]:
    """``GET /metrics`` for the configured scrapers (addresses or networks; loopback by default) and nobody else.

    Everyone else gets the 404 of an unknown path, whatever the method (a 405 would say the path exists), and so
    does ``/metrics/`` (which the router would otherwise redirect). The client address is the one the
    trusted-proxy rule gives (``app.http.middleware.client_address``); a request carrying forwarding headers came
    through a proxy, and so from beyond it, and is refused even when the proxy's own address is an allowed
    scraper's.
    """
    return [Route("/metrics", _Scrape(metrics, scrapers)), Route("/metrics/", _Scrape(metrics, ()))]


class _Scrape:
    """An ASGI endpoint, not a function: Starlette routes every method to it (a function route would answer 405 to
    a POST, which a path that does not exist never does)."""

    def __init__(self, metrics: Metrics, scrapers: Iterable[str]) -> None:
        self.metrics = metrics
        self.networks = [ipaddress.ip_network(s, strict=False) for s in scrapers]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client")
        if (scope["method"] not in ("GET", "HEAD") or not client or not _within(client[0], self.networks)
                or any(key in FORWARDING_HEADERS for key, _ in scope["headers"])):
            response = _not_found()
        else:
            body = await anyio.to_thread.run_sync(self.metrics.render)
            response = Response(body, media_type=CONTENT_TYPE_LATEST, headers={"cache-control": "no-store"})
        await response(scope, receive, send)


def _not_found() -> Response:
    return PlainTextResponse("Not Found", status_code=404)  # Starlette's answer to an unknown path


def _within(address: str, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:  # a unix socket peer, a test client's name: not an address anyone configured
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)
