"""Memory under slow bodies: one worker's RSS while N connections each hold a nearly complete
request body of the largest size the server takes, and when they all complete at once.

The real server (``python -m app serve``, one worker, SQLite in a temporary folder) with the
speed-up package on (the default) and off (``APP_TUNING=false``). N connections (200 by default)
each send ``POST /mcp`` with ``Content-Length: 4194304`` (``APP_MAX_BODY_BYTES``) and all of a
JSON-RPC body but its last byte; they hold it ``--hold`` seconds (under the 30 s body deadline),
then all send the last byte together. From one address by default, or ``--addresses K`` of them
(``X-Forwarded-For``, which the server believes of loopback, a trusted proxy by default), so that
the total cap answers, not the per-client one. The worker's RSS is sampled every 50 ms from /proc.

Printed: how many requests the server took in and how many it refused at once (503), the worker's
RSS idle, its peak while the bodies are held, its peak once they complete, and after.

Usage: ``python bench/slow_bodies.py [--connections 200] [--addresses 1] [--hold 8] [--baseline DIR]
[--json PATH]`` (``--baseline``: another checkout, with its own ``.venv``, served instead).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from files import proc_kb  # noqa: E402

from bench import PY, Server, migrate_and_seed  # noqa: E402 (bench/ is not a package)

BODY_BYTES = 4 * 1024 * 1024


def rss_kb(pid: int) -> int:
    return proc_kb(pid, "VmRSS")


class RssWatcher:
    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kb, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, rss_kb(self.pid))
            time.sleep(0.05)

    def __enter__(self) -> RssWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def request_head(port: int, address: str | None) -> bytes:
    forwarded = f"x-forwarded-for: {address}\r\n" if address else ""
    return (
        f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n"
        f"{forwarded}content-length: {BODY_BYTES}\r\n\r\n"
    ).encode()


def request_body() -> bytes:
    start = (b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
             b'"params":{"name":"search","arguments":{"query":"')
    end = b'"}}}'
    return start + b"a" * (BODY_BYTES - len(start) - len(end)) + end


class Attacker:
    def __init__(self, port: int, address: str | None, body: bytes) -> None:
        self.port, self.address, self.body = port, address, body
        self.refused = self.held = self.answered = 0
        self.writer: asyncio.StreamWriter | None = None
        self.reader: asyncio.StreamReader | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writer.write(request_head(self.port, self.address))
        # A refusal comes at once, before the body is read: look for it before sending the body.
        try:
            line = await asyncio.wait_for(self.reader.readline(), 0.5)
        except TimeoutError:
            line = b""
        if line.startswith(b"HTTP/1.1 503"):
            self.refused = 1
            return
        try:
            self.writer.write(self.body[:-1])
            await asyncio.wait_for(self.writer.drain(), 20)
        except (TimeoutError, ConnectionError):
            return
        self.held = 1

    async def finish(self) -> None:
        if not self.held or self.writer is None or self.reader is None:
            return
        try:
            self.writer.write(self.body[-1:])
            await self.writer.drain()
            line = await asyncio.wait_for(self.reader.readline(), 60)
            self.answered = int(line.startswith(b"HTTP/1.1 200"))
        except (TimeoutError, ConnectionError):
            pass

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def attack(port: int, pid: int, connections: int, addresses: int, hold: float) -> dict:
    body = request_body()
    idle = rss_kb(pid)
    attackers = [
        Attacker(port, f"198.51.100.{i % addresses + 1}" if addresses > 1 else None, body)
        for i in range(connections)
    ]
    with RssWatcher(pid) as held_peak:
        await asyncio.gather(*(a.open() for a in attackers))
        await asyncio.sleep(hold)
    with RssWatcher(pid) as done_peak:
        await asyncio.gather(*(a.finish() for a in attackers))
        await asyncio.sleep(1)
    for a in attackers:
        a.close()
    await asyncio.sleep(2)
    return {
        "connections": connections,
        "addresses": addresses,
        "taken_in": sum(a.held for a in attackers),
        "refused_503": sum(a.refused for a in attackers),
        "answered_200": sum(a.answered for a in attackers),
        "rss_idle_mib": round(idle / 1024),
        "rss_peak_held_mib": round(held_peak.peak_kb / 1024),
        "rss_peak_completed_mib": round(done_peak.peak_kb / 1024),
        "rss_after_mib": round(rss_kb(pid) / 1024),
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--addresses", type=int, default=1)
    parser.add_argument("--hold", type=float, default=8.0)
    parser.add_argument(
        "--tuning", default="true,false", help="APP_TUNING values to run, comma-separated"
    )
    parser.add_argument(
        "--baseline", type=Path, help="another checkout (its own .venv) to run instead"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    python = str(args.baseline / ".venv" / "bin" / "python") if args.baseline else PY
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "APP_DATABASE_URL": f"sqlite:///{tmp}/app.db",
            "APP_LOG_FORMAT": "json",
            "APP_LOG_LEVEL": "warning",
            "APP_MIGRATE_ON_START": "false",
            "APP_SEED_ON_START": "false",
            "APP_STORAGE_DIR": f"{tmp}/storage",
            "APP_TOOL_BUDGETS": "search=1000000000/minute",
        }
        migrate_and_seed(env)
        for tuning in args.tuning.split(","):
            server = Server(
                f"app-tuning-{tuning}",
                [python, "-m", "app", "serve", "--workers", "1"],
                {**env, "APP_TUNING": tuning},
                Path(tmp) / f"serve-{tuning}.log",
                "/readyz",
            )
            if args.baseline:
                server.cwd = args.baseline
            server.start()
            try:
                assert server.proc is not None
                row = asyncio.run(
                    attack(
                        server.port, server.proc.pid, args.connections, args.addresses, args.hold
                    )
                )
            finally:
                server.stop()
            rows.append({"tuning": tuning, **row})
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
