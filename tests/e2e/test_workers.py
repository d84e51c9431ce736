"""Stateless HTTP lets several uvicorn workers share the load with no session affinity.

The server is tests/e2e/probe_server.py (serve's HTTP stack and workers, with a test-only feature): this
depends on no demo and survives any fork."""

from __future__ import annotations

import json

import pytest
from mcp.client import Client

from tests.conftest import count_rows
from tests.e2e.server import LiveServer

pytestmark = pytest.mark.anyio

CALLS = [("probe_count", {}), ("probe_echo", {"text": "asyncio gather"}), ("probe_echo", {"text": "é" * 300})]


async def test_two_workers_both_serve_a_hundred_sequential_mixed_calls_from_fresh_clients(database_url: str, tmp_path):
    server = LiveServer(database_url, tmp_path / "workers.log", workers=2, module="tests.e2e.probe_server").start()
    versions = count_rows(database_url, "alembic_version")  # what every worker's connection must read
    failures: list[str] = []
    try:
        for i in range(100):
            name, args = CALLS[i % len(CALLS)]
            mode = "legacy" if i % 2 else "auto"
            try:
                async with Client(server.mcp_url, mode=mode) as client:
                    result = await client.call_tool(name, args)
                if result.is_error or result.structured_content != (
                        {"versions": versions} if name == "probe_count" else args):
                    failures.append(f"{i} {name} {mode}: {result.content[0].text}")
            except Exception as exc:  # every kind of failure counts, none may happen
                failures.append(f"{i} {name} {mode}: {exc!r}")
    finally:
        server.stop()
    assert failures == []
    calls = [e for e in map(json.loads, filter(lambda line: line.startswith("{"), server.log_lines()))
             if e.get("event") == "mcp.tool_call"]
    assert len(calls) == 100
    by_pid: dict[int, int] = {}
    for event in calls:
        by_pid[event["pid"]] = by_pid.get(event["pid"], 0) + 1
    assert len(by_pid) == 2, f"one worker served everything: {by_pid}"
