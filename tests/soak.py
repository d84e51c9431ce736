"""The soak: normal callers mixed with hostile ones against a running server, with what the server
does over time recorded. Run for about a minute by ``tests/e2e/test_soak.py`` (CI) and for longer by
``bench/soak.py``; the server is ``tests/e2e/soak_server.py`` (the stalling resolver).

- normal callers: ``probe_count`` (a database read) in a loop each, from addresses of their own;
- slow-body clients: connections declaring the largest body and sending all of it but its last
  byte, opened again as the server cuts or refuses them;
- PDF bombs: one anonymous caller sending four costly PDFs at once, again and again;
- stalled resolutions: anonymous callers (each from an address of its own) whose files' host answers
  no DNS (while a bomb is analysed they are refused at once: the anonymous callers' share is full);
- every 0.5 s: ``/readyz``, and the RSS of each worker.

Every caller names its address in ``X-Forwarded-For``, which the server believes of loopback (a
trusted proxy by default): each is a client of its own, as behind the ingress.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HEADERS = {
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
    "content-type": "application/json",
}
BODY_BYTES = 4 * 1024 * 1024


@dataclass
class SoakReport:
    seconds: float
    normal_ok: int = 0
    normal_failed: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    slow_bodies_refused: int = 0
    slow_bodies_taken_in: int = 0
    bombs_analysed: int = 0
    bombs_refused: int = 0  # refused busy: the caller's share, or all anonymous callers', full
    bombs_failed: list[str] = field(default_factory=list)  # any other error (there should be none)
    stalled_calls: int = 0
    stalled_waited: int = (
        0  # of them, those that waited on the silent DNS (the others: refused busy)
    )
    readyz: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, status)
    rss_mib: dict[int, list[tuple[float, int]]] = field(
        default_factory=dict
    )  # worker pid -> samples

    @property
    def p99_ms(self) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0

    @property
    def peak_rss_mib(self) -> dict[int, int]:
        return {pid: max(v for _, v in samples) for pid, samples in self.rss_mib.items() if samples}

    def summary(self) -> dict:
        total = self.normal_ok + len(self.normal_failed)
        return {
            "seconds": round(self.seconds),
            "normal_calls": total,
            "normal_failed": len(self.normal_failed),
            "normal_success_rate": round(self.normal_ok / total, 6) if total else None,
            "normal_p99_ms": round(self.p99_ms, 1),
            "readyz": {
                str(status): sum(1 for _, s in self.readyz if s == status)
                for status in sorted({s for _, s in self.readyz})
            },
            "peak_rss_mib_per_worker": sorted(self.peak_rss_mib.values()),
            "slow_bodies": {
                "taken_in": self.slow_bodies_taken_in,
                "refused_503": self.slow_bodies_refused,
            },
            "bombs": {"analysed": self.bombs_analysed, "refused_busy": self.bombs_refused,
                      "failed": len(self.bombs_failed)},
            "stalled_resolutions": {"calls": self.stalled_calls, "waited": self.stalled_waited},
        }


def workers_of(pid: int) -> list[int]:
    """The worker processes of a ``serve --workers N`` supervisor: its children but
    multiprocessing's resource tracker (the analysis processes are the workers' own children)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = task / "children"
        if children.exists():
            found += [int(p) for p in children.read_text().split()]
    return [p for p in found if b"resource_tracker" not in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def rss_mib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _rpc(tool: str, arguments: dict) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
    ).encode()


def soak_env(redis_url: str, redis_prefix: str, files_origin: str) -> dict[str, str]:
    """The soak server's settings (``files_origin``: the file host the bombs come from)."""
    return {
        "APP_REDIS_URL": redis_url,
        "APP_REDIS_PREFIX": redis_prefix,
        "APP_OUTBOUND_ALLOWLIST": files_origin.removeprefix("http://"),
        # anonymous callers analyse far more here than anyone would: their budgets are not tested
        "APP_TOOL_BUDGETS": "files=1000000/minute",
        "APP_FILES_ANON_QUOTA": str(10**11),
        # slow bodies are cut sooner, so that their clients come back within the minute
        "APP_HTTP_BODY_TIMEOUT": "10",
        "APP_FILES_FETCH_TIMEOUT": "6",
        "SOAK_STALL_S": "8",
        "APP_LOG_LEVEL": "warning",
    }


class Soak:
    def __init__(
        self,
        base_url: str,
        server_pid: int,
        bomb_url: str,
        seconds: float,
        *,
        normal_callers: int = 4,
        slow_bodies: int = 40,
        stalled: int = 12,
    ) -> None:
        self.base_url, self.server_pid, self.bomb_url = base_url, server_pid, bomb_url
        self.port = int(base_url.rsplit(":", 1)[1])
        self.seconds, self.normal_callers = seconds, normal_callers
        self.slow_bodies, self.stalled = slow_bodies, stalled
        self.report = SoakReport(seconds)
        self.started = 0.0
        self.ends = 0.0

    def running(self) -> bool:
        return time.monotonic() < self.ends

    async def run(self) -> SoakReport:
        self.started = time.monotonic()
        self.ends = self.started + self.seconds
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
        async with httpx.AsyncClient(base_url=self.base_url, timeout=60, limits=limits) as client:
            await asyncio.gather(
                self._sample(client),
                *(self._normal(client, i) for i in range(self.normal_callers)),
                *(self._slow_body(i) for i in range(self.slow_bodies)),
                *(self._bomb(client, i) for i in range(4)),
                *(self._stalled(client, i) for i in range(self.stalled)),
            )
        return self.report

    async def _sample(self, client: httpx.AsyncClient) -> None:
        while self.running():
            at = round(time.monotonic() - self.started, 1)
            try:
                status = (await client.get("/readyz", timeout=5)).status_code
            except httpx.HTTPError:
                status = 0
            self.report.readyz.append((at, status))
            for pid in workers_of(self.server_pid):
                self.report.rss_mib.setdefault(pid, []).append((at, rss_mib(pid)))
            await asyncio.sleep(0.5)

    async def _normal(self, client: httpx.AsyncClient, number: int) -> None:
        headers = {**HEADERS, "x-forwarded-for": f"203.0.113.{number + 1}"}
        while self.running():
            began = time.monotonic()
            try:
                response = await client.post(
                    "/mcp", content=_rpc("probe_count", {}), headers=headers, timeout=15
                )
                result = response.json().get("result") if response.status_code == 200 else None
                failure = (
                    None
                    if result and not result.get("isError")
                    else f"{response.status_code} {response.text[:200]}"
                )
            except httpx.HTTPError as exc:
                failure = f"{type(exc).__name__}: {exc}"
            if failure is None:
                self.report.normal_ok += 1
                self.report.latencies_ms.append((time.monotonic() - began) * 1000)
            else:
                self.report.normal_failed.append(failure)
            await asyncio.sleep(0.02)

    async def _slow_body(self, number: int) -> None:
        head = (
            f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{self.port}\r\n"
            f"content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            f"x-forwarded-for: 198.51.100.{number % 8 + 1}\r\n"
            f"content-length: {BODY_BYTES}\r\n\r\n"
        ).encode()
        body = b"{" + b"a" * (BODY_BYTES - 2)  # all but the last byte
        while self.running():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.5)
                continue
            try:
                writer.write(head)
                line = b""
                try:
                    line = await asyncio.wait_for(reader.readline(), 0.3)
                except TimeoutError:
                    pass
                if line.startswith(b"HTTP/1.1 503"):
                    self.report.slow_bodies_refused += 1
                    await asyncio.sleep(1)
                    continue
                self.report.slow_bodies_taken_in += 1
                writer.write(body)
                await asyncio.wait_for(writer.drain(), 60)
                # Held until the server cuts it (its body deadline) or the soak ends.
                await asyncio.wait_for(reader.read(), max(0.1, self.ends - time.monotonic()))
            except (TimeoutError, OSError):
                pass
            finally:
                writer.close()

    async def _bomb(self, client: httpx.AsyncClient, number: int) -> None:
        headers = {**HEADERS, "x-forwarded-for": "198.51.100.50"}  # one anonymous caller
        while self.running():
            arguments = {
                "file": {
                    "download_url": self.bomb_url,
                    "file_id": f"file_{uuid.uuid4().hex}",
                    "file_name": f"bomb-{number}.pdf",
                }
            }
            try:
                response = await client.post(
                    "/mcp", content=_rpc("analyze_file", arguments), headers=headers, timeout=120
                )
                result = response.json().get("result") or {}
                text = (result.get("content") or [{}])[0].get("text", "")
                if result.get("isError") and "Too many files are being analysed" in text:
                    self.report.bombs_refused += 1
                    await asyncio.sleep(1)
                elif result.get("isError"):
                    self.report.bombs_failed.append(text[:200])
                elif result:
                    self.report.bombs_analysed += 1
            except (httpx.HTTPError, ValueError):
                await asyncio.sleep(1)

    async def _stalled(self, client: httpx.AsyncClient, number: int) -> None:
        headers = {**HEADERS, "x-forwarded-for": f"198.51.100.{100 + number}"}
        while self.running():
            arguments = {
                "file": {
                    "download_url": f"https://stalled.test/{uuid.uuid4().hex}.pdf",
                    "file_id": f"file_{uuid.uuid4().hex}",
                }
            }
            began = time.monotonic()
            try:
                await client.post(
                    "/mcp", content=_rpc("analyze_file", arguments), headers=headers, timeout=120
                )
                self.report.stalled_calls += 1
                # Past the 1 s any refusal takes: it waited on the resolver, to its fetch's deadline.
                self.report.stalled_waited += time.monotonic() - began > 3
            except httpx.HTTPError:
                await asyncio.sleep(1)
