"""/readyz while callers' fetches wait on a silent DNS server (issue 38): name resolution blocks a
thread, and the readiness probe needs one too. On anyio's default limiter (40 threads), 45 stalled
resolutions took them all and /readyz answered 503 "database: timeout": an attacker with a silent
DNS server pulled every pod out of rotation. Resolution now has threads of its own
(``OutboundGuard(resolver_threads=...)``), and so has the probe (``Database``): anything else that
fills anyio's default threads leaves it alone too (the second case).

The stall is a resolver of the test's own, handed to the guard the server is built with: nothing
in production can set it."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated

import anyio.to_thread
import httpx
import pytest
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from app.auth.schemes import NOAUTH
from app.feature import Deps, Feature
from app.main import create_app
from app.mcp.registry import ToolRegistry
from app.net import OutboundGuard, OutboundRefused
from app.settings import load_settings
from tests.challenges import plain_call
from tests.serving import serving

STALLED = 45  # more than anyio's default 40 threads
HOST = "stalled.example"


class Resolutions:
    """A DNS server that answers nothing until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    def __call__(self, host: str, port: int) -> list[str]:
        self.hold()
        raise OSError("no answer")

    def hold(self) -> None:
        self.entered.release()
        self.release.wait(30)


class Fetched(BaseModel):
    outcome: str


def _tools(registry: ToolRegistry, deps: Deps, resolutions: Resolutions) -> None:
    @registry.tool(name="fetch_stalled", title="Fetch", description="Fetches from a stalled host",
                   read_only=True, destructive=False, open_world=True, security=[NOAUTH])
    async def fetch_stalled() -> Annotated[CallToolResult, Fetched]:
        try:
            await deps.guard.fetch(f"https://{HOST}/x")
            outcome = "fetched"
        except OutboundRefused as refused:
            outcome = str(refused)
        return CallToolResult(content=[TextContent(type="text", text=outcome)],
                              structured_content={"outcome": outcome})

    @registry.tool(name="hold_a_thread", title="Hold", description="Holds one of anyio's threads",
                   read_only=True, destructive=False, open_world=False, security=[NOAUTH])
    async def hold_a_thread() -> Annotated[CallToolResult, Fetched]:
        await anyio.to_thread.run_sync(resolutions.hold)  # anyio's default limiter, as most calls
        return CallToolResult(content=[TextContent(type="text", text="held")],
                              structured_content={"outcome": "held"})


@pytest.fixture
def stalled(database_url: str) -> Iterator[tuple[str, Resolutions]]:
    resolutions = Resolutions()
    guard = OutboundGuard(resolver=resolutions, total_timeout=40)

    def build(base_url: str):
        # 45 callers from one address: its share of the requests in flight (32) is not tested here.
        settings = load_settings(database_url=database_url, base_url=base_url, _env_file=None,
                                 max_requests_in_flight_per_client=100)
        tools = functools.partial(_tools, resolutions=resolutions)
        return create_app(settings, features=[Feature(name="fetcher", tools=tools)], guard=guard)

    try:
        with serving(build) as base_url:
            yield base_url, resolutions
    finally:
        resolutions.release.set()


# (the tool, the threads it fills before /readyz is asked, what each call ends with)
CASES = [("fetch_stalled", 8, "does not resolve"), ("hold_a_thread", 40, "held")]


@pytest.mark.parametrize(("tool", "threads", "outcome"), CASES, ids=["dns", "default-threads"])
def test_callers_holding_threads_do_not_make_the_pod_unready(stalled, tool, threads, outcome):
    base_url, resolutions = stalled
    with ThreadPoolExecutor(STALLED) as callers:
        calls = [callers.submit(plain_call, f"{base_url}/mcp", tool) for _ in range(STALLED)]
        try:
            # As many threads as the callers can take are held: the guard's 8, or anyio's 40.
            for _ in range(threads):
                assert resolutions.entered.acquire(timeout=15)
            answers = [httpx.get(f"{base_url}/readyz", timeout=10) for _ in range(3)]
            assert [a.status_code for a in answers] == [200, 200, 200], [a.text for a in answers]
            assert not any(call.done() for call in calls)  # the fetches still wait
        finally:
            resolutions.release.set()
        outcomes = [call.result() for call in calls]
    assert all(answer.status_code == 200 for answer in outcomes)
    assert all(outcome in answer.json()["result"]["structuredContent"]["outcome"]
               for answer in outcomes)
