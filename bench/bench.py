"""Throughput/latency of the MCP app against two baselines, on loopback.

Targets (each a single-worker uvicorn subprocess on a free 127.0.0.1 port):

* ``app``  - this server with everything on (``python -m app serve``), on a
  freshly migrated and seeded temporary SQLite database.
* ``bare`` - ``bench/bare_server.py``: a plain mcp ``MCPServer`` exposing the
  same two tools through the same service functions and ``Database.read``, with
  none of the app's middleware, extensions or logging. ``app / bare`` is the
  cost of what the app adds on top of the SDK.
* ``raw``  - ``bench/raw_server.py``: a Starlette endpoint that parses the
  request and replays the bytes the app answered. ``x / raw`` is the share of
  the HTTP-stack ceiling a target reaches; the goal is ``app >= 0.5x raw``.

Each (tool, wire path) is measured on both the legacy (2025-06-18, plain
JSON-RPC) and modern (2026-07-28, routing headers + ``_meta``) paths. C
asyncio loops, one keep-alive connection each, send requests back to back
for S seconds after a short warm-up; non-200 answers, JSON-RPC errors and
``isError`` results count as failures.

The load generator writes prebuilt HTTP/1.1 requests on C keep-alive
connections (an httpx client cost ~2 ms of CPU per request and saturated
before the raw server did). The table also shows each server process's CPU
time per request (from /proc, all threads) and the client's CPU share; the
"by server CPU" ratios compare capacity independently of the client.

Why one alternating schedule: on a shared 2-core machine the load generator and
server compete for CPU and background noise comes and goes. Running every
target back to back inside each (round, tool, path) cell, and repeating the
cells R times, spreads that noise evenly over all targets instead of letting
one target's block of measurements absorb a noisy minute.

Usage: ``python bench/bench.py [--seconds S] [--concurrency C] [--rounds R] [--json PATH]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TOOLS = {"get_zoo_animals": {"count": 10}, "search": {"q": "json dumps"}}
PATHS = ("legacy", "modern")
TARGETS = ("app", "bare", "raw")
VERSIONS = {"legacy": "2025-06-18", "modern": "2026-07-28"}
SEED_FILES = (
    "app/features/zoo/data/animals.json",
    "app/features/cafes/data/cafes.json",
    "app/features/search/data/corpus.jsonl.gz",
)
GOAL = 0.5  # app must reach at least this share of raw req/s


# --------------------------------------------------------------------- requests

def build_request(tool: str, path: str) -> tuple[dict[str, str], bytes]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": VERSIONS[path],
    }
    params: dict = {"name": tool, "arguments": TOOLS[tool]}
    if path == "modern":
        headers |= {"mcp-method": "tools/call", "mcp-name": tool}
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": VERSIONS[path],
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    body = {"jsonrpc": "2.0", "id": 1 if path == "legacy" else 3, "method": "tools/call", "params": params}
    return headers, json.dumps(body).encode()


def failure_of(response: httpx.Response) -> str | None:
    """None if the answer is a successful tool result, else a short reason."""
    if response.status_code != 200:
        return f"HTTP {response.status_code}: {response.text[:200]}"
    try:
        message = response.json()
    except ValueError:
        return f"not JSON: {response.text[:200]}"
    if "error" in message:
        return f"JSON-RPC error: {json.dumps(message['error'])[:200]}"
    result = message.get("result")
    if not isinstance(result, dict):
        return "no result"
    if result.get("isError"):
        return f"isError: {json.dumps(result.get('content'))[:200]}"
    return None


# ---------------------------------------------------------------------- servers

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    ready_path: str = "/mcp"  # /readyz must answer 200; otherwise any answer to POST means listening
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> None:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen([*self.argv, "--port", str(self.port)], cwd=ROOT, env=self.env,
                                         stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.ready_path == "/readyz":
                    if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                        return
                else:  # any answer to an empty POST means the server is listening (a GET would open SSE)
                    httpx.post(self.url + self.ready_path, content=b"{}", timeout=1)
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def log_tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


# ------------------------------------------------------------------------- load

@dataclass
class Sample:
    requests: int = 0
    seconds: float = 0.0
    failures: int = 0
    server_cpu: float = 0.0  # CPU seconds the server process (all threads) used while measured
    client_cpu: float = 0.0  # CPU seconds this load generator used while measured
    latencies: list[float] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, other: Sample) -> None:
        self.requests += other.requests
        self.seconds += other.seconds
        self.failures += other.failures
        self.server_cpu += other.server_cpu
        self.client_cpu += other.client_cpu
        self.latencies += other.latencies
        for reason, n in other.reasons.items():
            self.reasons[reason] = self.reasons.get(reason, 0) + n

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class Connection:
    """A keep-alive HTTP/1.1 connection with nothing on top.

    httpx costs ~2 ms of client CPU per request, which made the load generator,
    not the servers, the bottleneck. Sending prebuilt bytes and reading
    Content-Length (or chunked) bodies costs a few tens of microseconds.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, request: bytes) -> tuple[int, bytes]:
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        if "content-length" in headers:
            return status, await self.reader.readexactly(int(headers["content-length"]))
        body = b""
        while (size := int((await self.reader.readline()).strip() or b"0", 16)) > 0:
            body += await self.reader.readexactly(size)
            await self.reader.readline()
        await self.reader.readline()
        return status, body

    def close(self) -> None:
        self.writer.close()


def raw_request(port: int, headers: dict[str, str], body: bytes) -> bytes:
    lines = ["POST /mcp HTTP/1.1", f"host: 127.0.0.1:{port}", f"content-length: {len(body)}",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def failure_of_bytes(status: int, body: bytes) -> str | None:
    return failure_of(httpx.Response(status, content=body)) if status != 200 or b'"result"' not in body \
        or b'"isError":true' in body else None


async def hammer(conns: list[Connection], request: bytes, seconds: float) -> Sample:
    sample = Sample()
    deadline = time.perf_counter() + seconds

    async def loop(conn: Connection) -> None:
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            try:
                reason = failure_of_bytes(*await conn.send(request))
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                reason = f"{type(exc).__name__}: {exc}"[:200]
            sample.latencies.append(time.perf_counter() - t0)
            sample.requests += 1
            if reason:
                sample.failures += 1
                sample.reasons[reason] = sample.reasons.get(reason, 0) + 1

    start = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in conns))
    sample.seconds = time.perf_counter() - start
    return sample


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process, all threads included (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(server: Server, tool: str, path: str, args: argparse.Namespace) -> Sample:
    headers, body = build_request(tool, path)
    request = raw_request(server.port, headers, body)
    conns = [await Connection.open(server.port) for _ in range(args.concurrency)]
    try:
        await hammer(conns, request, args.warmup)
        server_cpu, client_cpu = cpu_seconds(server.proc.pid), time.process_time()
        sample = await hammer(conns, request, args.seconds)
        sample.server_cpu = cpu_seconds(server.proc.pid) - server_cpu
        sample.client_cpu = time.process_time() - client_cpu
        return sample
    finally:
        for conn in conns:
            conn.close()


# ---------------------------------------------------------------------- running

def call_once(url: str, tool: str, path: str) -> httpx.Response:
    headers, body = build_request(tool, path)
    response = httpx.post(url + "/mcp", headers=headers, content=body, timeout=30)
    reason = failure_of(response)
    if reason:
        raise RuntimeError(f"{url} {tool}/{path}: {reason}")
    return response


def start_servers(stack: ExitStack, tmp: Path) -> dict[str, Server]:
    env = {**os.environ, "APP_DATABASE_URL": f"sqlite:///{tmp / 'bench.db'}", "APP_LOG_FORMAT": "json",
           "APP_LOG_LEVEL": "WARNING", "APP_MIGRATE_ON_START": "false", "APP_SEED_ON_START": "false",
           "PYTHONUNBUFFERED": "1"}
    subprocess.run([PY, "-m", "app", "migrate"], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run([PY, "-m", "app", "seed"], cwd=ROOT, env=env, check=True, capture_output=True)
    servers: dict[str, Server] = {}

    def launch(server: Server) -> None:
        stack.callback(server.stop)
        server.start()
        servers[server.name] = server

    app = Server("app", [PY, "-m", "app", "serve", "--workers", "1"], env, tmp / "app.log", "/readyz")
    launch(app)
    env["APP_BASE_URL"] = app.url  # only the app reads it; set for completeness
    launch(Server("bare", [PY, str(ROOT / "bench" / "bare_server.py")], env, tmp / "bare.log"))
    recorded = {VERSIONS[p]: {t: call_once(app.url, t, p).text for t in TOOLS} for p in PATHS}
    (tmp / "recorded.json").write_text(json.dumps(recorded), encoding="utf-8")
    raw_env = {**env, "BENCH_RAW_RESPONSES": str(tmp / "recorded.json")}
    launch(Server("raw", [PY, str(ROOT / "bench" / "raw_server.py")], raw_env, tmp / "raw.log"))
    for tool in TOOLS:  # every target answers every (tool, path) correctly before timing starts
        for path in PATHS:
            app_structured = call_once(app.url, tool, path).json()["result"].get("structuredContent")
            bare_structured = call_once(servers["bare"].url, tool, path).json()["result"].get("structuredContent")
            call_once(servers["raw"].url, tool, path)
            if app_structured != bare_structured:
                print(f"note: {tool}/{path}: bare structuredContent differs from app's", file=sys.stderr)
    return servers


def run_schedule(servers: dict[str, Server], args: argparse.Namespace) -> dict[tuple, Sample]:
    totals = {(t, p, s): Sample() for t in TOOLS for p in PATHS for s in TARGETS}
    for r in range(args.rounds):
        for tool in TOOLS:
            for path in PATHS:
                for target in TARGETS:
                    sample = asyncio.run(measure(servers[target], tool, path, args))
                    totals[tool, path, target].add(sample)
                    print(f"  round {r + 1}/{args.rounds} {tool:<16} {path:<6} {target:<4} "
                          f"{sample.requests / sample.seconds:8.1f} req/s  failures {sample.failures}",
                          file=sys.stderr, flush=True)
    return totals


# ---------------------------------------------------------------------- reports

def report(totals: dict[tuple, Sample], args: argparse.Namespace) -> dict:
    rows, ratios = [], []
    for (tool, path, target), s in totals.items():
        rows.append({"tool": tool, "path": path, "target": target, "requests": s.requests,
                     "seconds": round(s.seconds, 3), "rps": round(s.requests / s.seconds, 1),
                     "p50_ms": round(s.percentile(0.50), 2), "p99_ms": round(s.percentile(0.99), 2),
                     "failures": s.failures, "failure_reasons": s.reasons,
                     "server_cpu_ms_per_req": round(1000 * s.server_cpu / max(s.requests, 1), 3),
                     "server_cpu_pct": round(100 * s.server_cpu / s.seconds),
                     "client_cpu_pct": round(100 * s.client_cpu / s.seconds)})
    by = {(r["tool"], r["path"], r["target"]): r for r in rows}
    for tool in TOOLS:
        for path in PATHS:
            app, bare, raw = (by[tool, path, t]["rps"] for t in TARGETS)
            cost = {t: by[tool, path, t]["server_cpu_ms_per_req"] for t in TARGETS}
            ratios.append({"tool": tool, "path": path, "app_raw": round(app / raw, 3),
                           "bare_raw": round(bare / raw, 3), "app_bare": round(app / bare, 3),
                           "goal_met": app >= GOAL * raw,
                           # capacity per server CPU second: immune to a saturated load generator
                           "cpu_app_raw": round(cost["raw"] / cost["app"], 3) if cost["app"] else None,
                           "cpu_bare_raw": round(cost["raw"] / cost["bare"], 3) if cost["bare"] else None,
                           "raw_client_bound": by[tool, path, "raw"]["client_cpu_pct"] >= 85
                           and by[tool, path, "raw"]["server_cpu_pct"] < 60})

    header = (f"{'tool':<16} | {'path':<6} | {'target':<6} | {'req/s':>8} | {'p50 ms':>7} | {'p99 ms':>7} | "
              f"failures | srv cpu ms/req | srv cpu % | client cpu %")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['tool']:<16} | {r['path']:<6} | {r['target']:<6} | {r['rps']:>8.1f} | "
              f"{r['p50_ms']:>7.2f} | {r['p99_ms']:>7.2f} | {r['failures']:>8} | "
              f"{r['server_cpu_ms_per_req']:>14.3f} | {r['server_cpu_pct']:>9} | {r['client_cpu_pct']:>12}")
    print("\nratios (req/s)")
    for q in ratios:
        print(f"{q['tool']:<16} | {q['path']:<6} | app/raw {q['app_raw']:.3f} | bare/raw {q['bare_raw']:.3f} | "
              f"app/bare {q['app_bare']:.3f}")
    print("\nratios by server CPU per request (raw cost / target cost; what each would reach if the server "
          "were the bottleneck)")
    for q in ratios:
        print(f"{q['tool']:<16} | {q['path']:<6} | app/raw {q['cpu_app_raw']} | bare/raw {q['cpu_bare_raw']}")
    print(f"\ntarget app >= {GOAL}x raw")
    for q in ratios:
        note = ("  [raw was bound by the load generator, not its server: the req/s ratio overstates app; "
                f"by server CPU app/raw is {q['cpu_app_raw']}]") if q["raw_client_bound"] else ""
        print(f"{q['tool']:<16} | {q['path']:<6} | {'MET' if q['goal_met'] else 'NOT MET'} "
              f"(app/raw {q['app_raw']:.3f}){note}")
    for r in rows:
        for reason, n in r["failure_reasons"].items():
            print(f"failure {r['tool']}/{r['path']}/{r['target']} x{n}: {reason}")
    config = {k: getattr(args, k) for k in ("seconds", "warmup", "concurrency", "rounds")}
    return {"config": config, "results": rows, "ratios": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds per cell and round")
    parser.add_argument("--warmup", type=float, default=0.5, help="warm-up seconds before each measurement")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()
    missing = [f for f in SEED_FILES if not (ROOT / f).exists()]
    if missing:
        print(f"seed data missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    cells = args.rounds * len(TOOLS) * len(PATHS) * len(TARGETS)
    print(f"{cells} measurements, ~{cells * (args.seconds + args.warmup):.0f}s of load "
          f"(C={args.concurrency}, S={args.seconds}s, warm-up {args.warmup}s, R={args.rounds})", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp, ExitStack() as stack:
        servers = start_servers(stack, Path(tmp))
        totals = run_schedule(servers, args)
        crashed = [s.name for s in servers.values() if s.proc and s.proc.poll() is not None]
        failing = {target for (_, _, target), s in totals.items() if s.failures}
        for name in sorted(set(crashed) | failing):
            state = "exited during the run" if name in crashed else "had failures"
            print(f"{name} {state}; its log ends with:\n{servers[name].log_tail()}", file=sys.stderr)
    figures = report(totals, args)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
