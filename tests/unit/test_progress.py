"""Progress reports of a long call (app.mcp.progress); the files feature's:
test_file_progress.py."""

from __future__ import annotations

import anyio

from app.mcp.progress import Progress
from tests.fakes import ProgressSink


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_reports_are_at_most_one_an_interval_each_more_than_the_last_and_a_final_one_always_goes():
    send = ProgressSink()
    sent = send.sent
    clock = Clock()
    progress = Progress(send, interval=0.25, clock=clock)

    async def run() -> None:
        await progress.report(10, 100, "a")
        await progress.report(20, 100, "b")  # within the interval: dropped
        clock.now += 0.3
        await progress.report(5, 100, "c")  # not more than the last sent: dropped
        await progress.report(30, 100, "d")
        await progress.report(100, 100, "e", now=True)  # the last: sent whatever the interval
        await progress.report(100, 100, "f", now=True)  # no more than before: never twice

    anyio.run(run)
    assert sent == [(10, 100, "a"), (30, 100, "d"), (100, 100, "e")]


def test_a_call_without_a_progress_token_reports_nothing():
    class Ctx:
        class request_context:  # noqa: N801 (the SDK's attribute)
            meta = {"openai/locale": "fr"}

        async def report_progress(self, *args: object) -> None:
            raise AssertionError("nothing is sent for a call that did not ask")

    progress = Progress.of(Ctx())
    assert not progress.wanted
    anyio.run(progress.report, 1, 2, "x")
