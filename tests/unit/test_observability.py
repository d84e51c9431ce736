"""The observability pieces on their own: label values held to closed sets, scrape-time gauges that fail alone,
the multiprocess directory and its dead workers, the OTEL_* settings refused, the traceparent read."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, text

from app.http.middleware import trace_id_of
from app.logging import LogWriter, on_dropped_lines
from app.observability.metrics import Metrics, Reading
from app.observability.multiprocess import MetricsDirError, forget_dead_processes, prepare_multiprocess_dir
from app.observability.traces import tracing_refusals, tracing_requested
from app.settings import SettingsError, load_settings


def _samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(metrics.render().decode()) for s in family.samples}


def test_names_a_client_chose_are_counted_under_other_never_as_labels_of_their_own():
    metrics = Metrics()
    metrics.know(methods=["tools/call"], tools=["search"])
    metrics.mcp_operation("tools/call", "search", None, 0.01)
    metrics.mcp_operation("tools/call", "a" * 500, "tool_error", 0.01)
    metrics.mcp_operation("x/" + "b" * 200, None, "-32601", 0.01)
    metrics.http_request("BREW", "", 405, 0.001)
    metrics.token_grant("urn:anything:at:all", "unsupported_grant_type")
    got = _samples(metrics)
    operation = {tuple(v for _, v in labels) for name, labels in got
                 if name == "mcp_server_operation_duration_seconds_count"}  # error type, tool, method
    assert operation == {("", "search", "tools/call"), ("tool_error", "_OTHER", "tools/call"),
                         ("-32601", "", "_OTHER")}
    http = {tuple(v for _, v in labels) for name, labels in got if name == "http_server_request_duration_seconds_count"}
    assert http == {("_OTHER", "405", "")}
    assert got[("app_token_grants_total", (("grant_type", "_OTHER"), ("outcome", "unsupported_grant_type")))] == 1


def test_a_scrape_time_gauge_that_fails_is_left_out_and_the_rest_is_scraped(capsys):
    metrics = Metrics()

    def outage():
        raise ConnectionError("database down")

    metrics.read_at_scrape(outage)
    metrics.read_at_scrape(lambda: [Reading("kept_things", "Things.", 2)])
    metrics.sign_in("success")
    got = _samples(metrics)
    assert got[("kept_things", ())] == 2
    assert got[("app_sign_ins_total", (("outcome", "success"),))] == 1


def test_the_pool_gauge_follows_connections_checked_out_and_in(tmp_path: Path):
    metrics = Metrics()
    engine = create_engine(f"sqlite:///{tmp_path / 'pool.db'}")  # a file: a queue pool, as served
    metrics.watch_pool(engine)
    with engine.connect() as one, engine.connect() as two:
        one.execute(text("select 1"))
        two.execute(text("select 1"))
        assert _samples(metrics)[("app_db_pool_connections_in_use", ())] == 2
    assert _samples(metrics)[("app_db_pool_connections_in_use", ())] == 0
    engine.dispose()


def test_dropped_log_lines_reach_the_counter():
    metrics = Metrics()
    on_dropped_lines(metrics.log_lines_dropped.inc)
    try:
        writer = LogWriter(io.StringIO(), capacity=2, sync=False, interval=60)
        for i in range(5):
            writer.put(f"line {i}")
    finally:
        on_dropped_lines(None)
    assert _samples(metrics)[("app_log_lines_dropped_total", ())] == 3


def test_a_dead_workers_live_gauges_are_forgotten_and_its_counters_kept(tmp_path: Path):
    # A worker of its own, in multiprocess mode: it checks out two connections' worth, counts, and dies.
    worker = ("from app.observability.metrics import Metrics; m = Metrics(); m.db_pool_in_use.inc(2); "
              "m.sign_in('success'); import os; print(os.getpid())")
    pid = int(subprocess.run([sys.executable, "-c", worker], env={**os.environ, "PROMETHEUS_MULTIPROC_DIR":
                             str(tmp_path)}, capture_output=True, text=True, check=True).stdout)
    scraper = Metrics()
    scraper.multiprocess_dir = str(tmp_path)  # what the environment says in a worker of serve
    assert (tmp_path / f"gauge_livesum_{pid}.db").exists()
    got = _samples(scraper)  # the scrape forgets the dead worker's live gauges first
    assert not (tmp_path / f"gauge_livesum_{pid}.db").exists()
    assert got.get(("app_db_pool_connections_in_use", ()), 0) == 0
    assert got[("app_sign_ins_total", (("outcome", "success"),))] == 1
    assert forget_dead_processes(str(tmp_path)) == []


def test_a_live_workers_gauges_are_kept(tmp_path: Path):
    (tmp_path / f"gauge_livesum_{os.getpid()}.db").write_bytes(b"")
    assert forget_dead_processes(str(tmp_path)) == []
    assert (tmp_path / f"gauge_livesum_{os.getpid()}.db").exists()


def _restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare_multiprocess_dir sets the variable for good: recorded here, so the test leaves it as it was."""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "recorded")
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")


def test_the_configured_metrics_dir_is_emptied_of_samples_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _restored_after(monkeypatch)
    for stale in ("counter_123.db", "histogram_9.db", "gauge_livesum_77.db", "gauge_mostrecent_5.db"):
        (tmp_path / stale).write_bytes(b"stale")
    (tmp_path / "notes.txt").write_text("an operator's")
    (tmp_path / "app.db").write_bytes(b"SQLite format 3")  # the directory chosen may be the database's own
    assert prepare_multiprocess_dir(str(tmp_path)) == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "notes.txt"]
    assert os.environ["PROMETHEUS_MULTIPROC_DIR"] == str(tmp_path)


def test_a_metrics_dir_that_cannot_be_written_is_one_line_naming_the_variable(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch):
    _restored_after(monkeypatch)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(MetricsDirError) as refused:
        prepare_multiprocess_dir(str(blocker / "metrics"))
    assert str(refused.value).startswith(f"APP_METRICS_DIR: {blocker / 'metrics'} is not a writable directory")
    assert "\n" not in str(refused.value)
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ


def test_metrics_scrapers_that_are_not_addresses_are_one_line():
    with pytest.raises(SettingsError) as refused:
        load_settings(metrics_scrapers="10.0.0.0/8,prometheus.internal", _env_file=None)
    assert len(refused.value.lines) == 1 and refused.value.lines[0].startswith("APP_METRICS_SCRAPERS")
    assert load_settings(metrics_scrapers="10.0.0.0/8, ::1", _env_file=None).metrics_scrapers == ["10.0.0.0/8", "::1"]


@pytest.mark.parametrize(("environ", "requested", "lines"), [
    ({}, False, []),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True, []),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True, []),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False, []),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False, []),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, True,
     ["OTEL_EXPORTER_OTLP_PROTOCOL: only http/protobuf (OTLP over HTTP) is shipped, got 'grpc'"]),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
      "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, True, []),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, True,
     ["OTEL_TRACES_EXPORTER: only otlp (or none) is supported, got 'zipkin'"]),
])
def test_what_the_otel_variables_ask_for(environ, requested, lines):
    assert tracing_requested(environ) is requested
    assert tracing_refusals(environ) == lines


@pytest.mark.parametrize(("header", "trace_id"), [
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"),
    (" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 ", "4bf92f3577b34da6a3ce929d0e0e4736"),
    ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None),
    ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None),
    ("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", None),
    ('00-4bf92f3577b34da6"}{"x":1-00f067aa0ba902b7-01', None),
    ("", None),
])
def test_the_trace_id_of_a_traceparent_header(header, trace_id):
    assert trace_id_of(header) == trace_id


def test_nothing_python_m_app_imports_before_serve_prepares_the_metrics_dir_imports_prometheus_client():
    # prometheus-client picks its value class when first imported: imported before serve sets the directory, a
    # worker's samples stay in its memory and a scrape of several workers reports one.
    probe = ("import sys, app.__main__, app.settings, app.observability.multiprocess, app.observability.traces, "
             "tests.e2e.probe_server; print(sorted(m for m in sys.modules if m.startswith(('prometheus_client', "
             "'opentelemetry.sdk'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).parents[2])
    assert done.stdout.strip() == "[]"
