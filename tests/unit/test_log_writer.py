"""Log lines leave through a buffer and a writer thread: logging never waits on the stream."""

from __future__ import annotations

import io
import json
import logging
import threading
import time

import structlog

from app.logging import LogWriter, configure_logging


class StuckStream(io.StringIO):
    """A stream whose writes hang until released, like a pipe nobody reads."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def write(self, text: str) -> int:
        self.entered.set()
        self.release.wait(10)
        return super().write(text)


def test_our_events_and_library_records_come_out_as_json_lines_in_order():
    stream = io.StringIO()
    writer = configure_logging("json", "info", stream=stream)
    try:
        structlog.get_logger("app.test").info("first", n=1)
        logging.getLogger("some.library").warning("second %s", "arg")
        structlog.get_logger("app.test").debug("below the level")
        writer.flush()
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        configure_logging("console", "info", sync=True)
    assert [(e["event"], e["level"], e["logger"]) for e in lines] == [
        ("first", "info", "app.test"), ("second arg", "warning", "some.library")]
    assert lines[0]["n"] == 1 and lines[0]["pid"] > 0 and lines[0]["timestamp"].endswith("Z")


def test_logging_returns_while_the_stream_is_stuck_and_nothing_is_lost_once_it_moves():
    stream = StuckStream()
    writer = configure_logging("json", "info", stream=stream)
    log = structlog.get_logger("app.test")
    try:
        log.info("wake the writer")
        assert stream.entered.wait(5)  # the writer thread is now blocked inside write()
        done = threading.Event()

        def burst() -> None:
            for i in range(200):
                log.info("during", i=i)
            done.set()

        threading.Thread(target=burst, daemon=True).start()
        # A blocking logger would still be stuck behind the writer; a buffered one is long done.
        assert done.wait(5)
        stream.release.set()
        writer.flush()
        events = [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        stream.release.set()
        configure_logging("console", "info", sync=True)
    assert [e.get("i") for e in events if e["event"] == "during"] == list(range(200))


def test_a_full_buffer_drops_lines_and_says_how_many():
    stream = StuckStream()
    writer = LogWriter(stream, capacity=10)
    try:
        writer.put("{\"event\": \"wake\"}")
        assert stream.entered.wait(5)
        for i in range(25):
            writer.put(json.dumps({"event": "line", "i": i}))
        stream.release.set()
        writer.close()
    finally:
        stream.release.set()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    kept = [e["i"] for e in events if e["event"] == "line"]
    dropped = [e for e in events if e["event"] == "log.dropped"]
    assert kept == list(range(10))
    assert len(dropped) == 1 and dropped[0]["count"] == 15 and dropped[0]["level"] == "warning"


def test_close_writes_what_is_still_buffered():
    stream = io.StringIO()
    writer = LogWriter(stream, interval=60)  # the thread would not wake on its own for a minute
    writer.put("{\"event\": \"last words\"}")
    writer.close()
    assert stream.getvalue() == "{\"event\": \"last words\"}\n"


class FailingOnce(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def write(self, text: str) -> int:
        if not self.failed:
            self.failed = True
            raise OSError("pipe closed")
        return super().write(text)


def test_lines_a_stream_refused_are_counted_as_dropped():
    stream = FailingOnce()
    writer = LogWriter(stream, interval=60)
    writer.put("{\"event\": \"a\"}")
    writer.put("{\"event\": \"b\"}")
    writer.flush()  # refused
    writer.put("{\"event\": \"c\"}")
    writer.close()
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["c", "log.dropped"] and events[1]["count"] == 2


def test_a_stream_that_is_not_utf8_gets_escapes_instead_of_losing_the_batch():
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    writer = LogWriter(stream, interval=60)
    writer.put('{"event": "café ☕"}')
    writer.put('{"event": "plain"}')
    writer.close()
    assert raw.getvalue().decode("ascii").splitlines() == ['{"event": "caf\\xe9 \\u2615"}', '{"event": "plain"}']


def test_a_synchronous_writer_writes_each_line_as_it_is_logged():
    stream = io.StringIO()
    writer = LogWriter(stream, sync=True)
    writer.put("{\"event\": \"now\"}")
    assert stream.getvalue() == "{\"event\": \"now\"}\n"
    writer.close()


class StallingStream(io.StringIO):
    """A collector that stalls its first write for ``seconds``, then takes everything."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.stalled = threading.Event()

    def write(self, text: str) -> int:
        if not self.stalled.is_set():
            self.stalled.set()
            time.sleep(self.seconds)
        return super().write(text)


def test_write_through_on_a_stuck_stream_gives_up_within_its_bound_and_counts_what_it_could_not_write():
    from app.logging import GIVE_UP_S, on_dropped_lines

    counted: list[int] = []
    on_dropped_lines(counted.append)
    stream = StallingStream(GIVE_UP_S + 2)
    writer = LogWriter(stream, interval=0.01)
    try:
        writer.put('{"event": "wake"}')
        assert stream.stalled.wait(5)  # the thread is inside the stalled write
        writer.put('{"event": "a"}')
        writer.put('{"event": "b"}')
        started = time.monotonic()
        writer.write_through()
        writer.put('{"event": "c"}')  # the stream is known stuck: not waited on again
        waited = time.monotonic() - started
        time.sleep(2.5)  # the stream moves
        writer.put('{"event": "d"}')
    finally:
        on_dropped_lines(None)
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert GIVE_UP_S - 0.5 < waited < GIVE_UP_S + 0.5
    assert [e["event"] for e in events] == ["wake", "d", "log.dropped"] and events[2]["count"] == 3
    assert sum(counted) == 3


def test_a_flush_behind_a_full_queue_and_a_stalled_stream_returns_and_writes_in_order_once_it_moves():
    stream = StallingStream(3.0)
    writer = LogWriter(stream, capacity=1, interval=0.01)
    writer.put('{"event": "wake"}')
    assert stream.stalled.wait(5)
    writer.put('{"event": "x"}')  # the queue is full now
    started = time.monotonic()
    writer.flush()
    assert time.monotonic() - started < 2.5  # bounded: the stream is still stalled
    time.sleep(1.5)
    writer.put('{"event": "y"}')  # a new thread took over once the stream moved
    writer.close()
    assert [json.loads(line)["event"] for line in stream.getvalue().splitlines()] == ["wake", "x", "y"]
