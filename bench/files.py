"""File analysis at size: wall time, MB/s and peak memory of the server for 1, 10 and 100 MB CSV files.

The real server (``python -m app serve``, one worker, SQLite, local storage in a temporary folder) fetches
each file from a loopback file server (allow-listed with ``APP_OUTBOUND_ALLOWLIST``), streams it to disk,
analyses it in a worker process, stores it and records it: one ``analyze_file`` call per size, timed from
the client.

Memory is read from /proc: ``VmHWM`` (peak resident set) of the server process, and of each analysis worker
process it started (they are its children), compared with the server's RSS when idle. The goal: the server's
peak must not grow with file size (a 100 MB file under +50 MB over idle).

Usage: ``python bench/files.py [--sizes 1,10,100] [--json PATH]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import PY, Server  # noqa: E402 (bench/ is not a package)

MB = 1_000_000


def write_csv(path: Path, size: int) -> None:
    """A realistic table: ids, names, prices, flags, dates, free text; ``size`` bytes or a little more."""
    rng = random.Random(7)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("id,name,price,quantity,in_stock,added,comment\n")
        written, i = 0, 0
        while written < size:
            batch = []
            for _ in range(5000):
                i += 1
                batch.append(f"{i},{rng.choice(words)} {i % 977},{rng.uniform(0, 500):.2f},{rng.randint(0, 90)},"
                             f"{'true' if i % 3 else 'false'},2026-{i % 12 + 1:02d}-{i % 28 + 1:02d},"
                             f"\"{' '.join(rng.choices(words, k=4))}\"\n")
            chunk = "".join(batch)
            out.write(chunk)
            written += len(chunk)


def serve_folder(folder: Path) -> tuple[ThreadingHTTPServer, int]:
    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def proc_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        path = task / "children"
        if path.exists():
            found += [int(p) for p in path.read_text().split()]
    return found


class PeakWatcher:
    """Samples the RSS of the analysis workers every 20 ms (they come and go; VmHWM dies with them)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kb, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for child in children(self.pid):
                try:
                    self.peak_kb = max(self.peak_kb, proc_kb(child, "VmHWM"))
                except (FileNotFoundError, ProcessLookupError):
                    pass
            time.sleep(0.02)

    def __enter__(self) -> PeakWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def call(url: str, file_url: str, name: str) -> dict:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "analyze_file", "arguments": {"file": {
                "download_url": file_url, "file_id": f"file_bench_{name}", "file_name": name}}}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-06-18"}
    response = httpx.post(url + "/mcp", json=body, headers=headers, timeout=600)
    result = response.json().get("result") or {}
    if response.status_code != 200 or result.get("isError"):
        raise RuntimeError(f"analyze_file {name}: HTTP {response.status_code} {response.text[:300]}")
    return result["structuredContent"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1,10,100", help="file sizes in MB, comma-separated")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-files-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "www").mkdir()
        for size in sizes:
            write_csv(tmp / "www" / f"{size}mb.csv", size * MB)
        (tmp / "www" / "warmup.csv").write_text("a,b\n1,2\n")
        www, port = serve_folder(tmp / "www")
        env = {**os.environ, "APP_DATABASE_URL": f"sqlite:///{tmp / 'bench.db'}", "APP_LOG_FORMAT": "json",
               "APP_LOG_LEVEL": "WARNING", "APP_FILES_DIR": str(tmp / "files"),
               "APP_STORAGE_DIR": str(tmp / "files"), "APP_VAR_DIR": str(tmp / "var"),
               "APP_OUTBOUND_ALLOWLIST": f"127.0.0.1:{port}", "APP_FILES_MAX_BYTES": str(max(sizes) * 2 * MB),
               "APP_FILES_FETCH_TIMEOUT": "600", "PYTHONUNBUFFERED": "1",
               # The benchmark is one anonymous caller measuring throughput, not its budget or quota.
               "APP_FILES_ANON_QUOTA": str(10**12), "APP_TOOL_BUDGETS": "files=1000000/minute"}
        server = Server("app", [PY, "-m", "app", "serve", "--workers", "1"], env, tmp / "app.log", "/readyz")
        server.start()
        try:
            assert server.proc is not None
            time.sleep(1.0)
            idle_kb = proc_kb(server.proc.pid, "VmRSS")
            # The first call starts the analysis worker process (imports included): timed apart.
            started = time.perf_counter()
            call(server.url, f"http://127.0.0.1:{port}/warmup.csv", "warmup.csv")
            warmup_s = time.perf_counter() - started
            rows = []
            for size in sizes:
                name = f"{size}mb.csv"
                nbytes = (tmp / "www" / name).stat().st_size
                with PeakWatcher(server.proc.pid) as watcher:
                    started = time.perf_counter()
                    out = call(server.url, f"http://127.0.0.1:{port}/{name}", name)
                    wall = time.perf_counter() - started
                server_peak_kb = proc_kb(server.proc.pid, "VmHWM")
                rows.append({"size_mb": round(nbytes / MB, 1), "wall_s": round(wall, 2),
                             "mb_per_s": round(nbytes / MB / wall, 1),
                             "server_peak_rss_mb": round(server_peak_kb / 1024, 1),
                             "server_peak_over_idle_mb": round((server_peak_kb - idle_kb) / 1024, 1),
                             "worker_peak_rss_mb": round(watcher.peak_kb / 1024, 1),
                             "summary": out["summary"][:80]})
        finally:
            server.stop()
            www.shutdown()
    print(f"server idle RSS: {idle_kb / 1024:.1f} MB (one uvicorn worker; the analysis runs in worker processes)")
    print(f"first call (starts the analysis worker): {warmup_s:.2f} s")
    print(f"{'size MB':>8} {'wall s':>7} {'MB/s':>6} {'server peak':>12} {'over idle':>10} {'worker peak':>12}")
    for r in rows:
        print(f"{r['size_mb']:>8} {r['wall_s']:>7} {r['mb_per_s']:>6} {r['server_peak_rss_mb']:>10} MB "
              f"{r['server_peak_over_idle_mb']:>7} MB {r['worker_peak_rss_mb']:>10} MB")
    if args.json:
        args.json.write_text(json.dumps({"idle_rss_mb": round(idle_kb / 1024, 1), "warmup_s": round(warmup_s, 2),
                                         "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
