"""Where a request's CPU goes: py-spy samples of this server under wrk load, summarised by area.

For each wire path (legacy 2025-06-18, modern 2026-07-28) the app serves ``tools/call`` of one
tool under ``wrk`` (C connections, S seconds) while ``py-spy record`` samples the server process.
By default only the thread holding the GIL is sampled (``py-spy --gil``): that is where the one
core a worker has goes. Sampling every thread (``--all-threads``) instead counts each database
thread parked in the driver, waiting to take the GIL back, as if it were working.

The summary attributes every sample to the innermost frame that belongs to a known area (this
app, the SDK's transport, its request handling, pydantic, SQLAlchemy, the logging path, anyio's
thread hop, ...), so each sample counts once, for the most specific work it was doing, and
prints the share of samples per area and the hottest self-time functions.

Needs ``wrk`` (Debian package) and ``py-spy`` (PyPI); neither is a dependency of the project.

Usage: ``python bench/profile.py [--case zoo|zoo-bearer|recipes|...] [--paths legacy,modern]
[--seconds 10] [--concurrency 16]
[--database-url URL] [--target app|static] [--keep DIR]`` (a temporary SQLite database by default).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import CASES, PATHS, PY, ROOT, Server, build_request, call_once  # noqa: E402

# (area, substring of "function (file:line)"): a frame takes the first area it matches, so specific
# areas come before the generic ones they run inside.
AREAS = (
    ("db: sqlalchemy", "sqlalchemy/"),
    ("db: sqlite3/psycopg driver", "sqlite3/"),
    ("db: sqlite3/psycopg driver", "psycopg/"),
    ("write turns (filelock)", "filelock/"),
    ("thread hop (anyio.to_thread)", "anyio/to_thread"),
    ("thread hop (anyio.to_thread)", "anyio/_backends/_asyncio.py:run_sync_in_worker_thread"),
    ("logging (structlog + stdlib)", "structlog/"),
    ("logging (structlog + stdlib)", "logging/__init__"),
    ("validation (pydantic, jsonschema)", "pydantic"),
    ("validation (pydantic, jsonschema)", "fastjsonschema"),
    ("json encode/decode", "json/"),
    ("app: features", "app/features/"),
    ("app: registry/middleware", "app/mcp/"),
    ("app: auth", "app/auth/"),
    ("app: authorization server", "app/authserver/"),
    ("app: http middleware", "app/http/"),
    ("sdk: streamable http transport", "mcp/server/streamable_http"),
    ("sdk: request handling", "mcp/server/"),
    ("sdk: shared session/streams", "mcp/shared/"),
    ("anyio streams/task groups", "anyio/"),
    ("starlette", "starlette/"),
    ("uvicorn (http parsing, asgi)", "uvicorn/"),
    ("h11/httptools", "h11/"),
    ("h11/httptools", "httptools/"),
    ("asyncio event loop", "asyncio/"),
)


# A sample whose innermost frame is one of these is a thread waiting (worker threads for work, the
# event loop in epoll), not CPU spent: reported apart so the areas add up to the busy time.
IDLE_LEAVES = ("Condition.wait (threading.py", "Event.wait (threading.py", "select (selectors.py",
               "Runner.run (asyncio/runners.py", "_worker (concurrent/")


def area_of(frame: str) -> str | None:
    for area, needle in AREAS:
        if needle in frame:
            return area
    return None


def summarise(collapsed: Path, top: int = 12) -> dict:
    """Share of samples per area (innermost known frame of each sample) and the hottest leaf functions."""
    per_area: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        total += n
        if frames[-1].startswith(IDLE_LEAVES):
            per_area["(idle: threads and the loop waiting)"] += n
            continue
        leaves[frames[-1]] += n
        # The innermost known area owns the sample: time in sqlalchemy under a feature is the database's.
        owner = next((a for a in map(area_of, reversed(frames)) if a), "other (interpreter, stdlib)")
        per_area[owner] += n
    return {
        "samples": total,
        "areas": [(area, n / total) for area, n in per_area.most_common()] if total else [],
        "leaves": [(leaf, n / total) for leaf, n in leaves.most_common(top)] if total else [],
    }


def wrk_script(tmp: Path, case: str, path: str, token: str | None) -> Path:
    headers, body = build_request(case, path, token)
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(body.decode())}"]
    lines += [f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()]
    script = tmp / f"{case}-{path}.lua"
    script.write_text("\n".join(lines) + "\n")
    return script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="zoo", choices=sorted(CASES),
                        help="the call: bench/bench.py's cells (zoo-bearer and recipes carry alice's token)")
    parser.add_argument("--paths", default=",".join(PATHS), help="comma-separated, of " + ", ".join(PATHS))
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--all-threads", action="store_true",
                        help="sample every thread, not only the one holding the GIL (shows where threads WAIT)")
    parser.add_argument("--database-url", help="default: a fresh temporary SQLite database")
    parser.add_argument("--target", default="app", choices=("app", "static"),
                        help="static: the bare in-memory MCPServer of bench/static_server.py (zoo only), to see "
                             "what the app adds over the SDK")
    parser.add_argument("--keep", type=Path, help="keep the raw collapsed stacks (flamegraph input) here")
    args = parser.parse_args()
    if args.target == "static" and args.case != "zoo":
        parser.error("the static server answers the zoo call only")
    for tool in ("wrk", "py-spy"):
        if shutil.which(tool) is None and not (Path(PY).parent / tool).exists():
            print(f"{tool} is not installed (wrk: apt-get install wrk; py-spy: pip install py-spy)", file=sys.stderr)
            return 2
    pyspy = shutil.which("py-spy") or str(Path(PY).parent / "py-spy")

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        url = args.database_url or f"sqlite:///{tmp / 'profile.db'}"
        env = {**os.environ, "APP_DATABASE_URL": url, "APP_LOG_FORMAT": "json", "APP_LOG_LEVEL": "WARNING",
               "APP_MIGRATE_ON_START": "false", "APP_SEED_ON_START": "false", "PYTHONUNBUFFERED": "1"}
        subprocess.run([PY, "-m", "app", "migrate"], cwd=ROOT, env=env, check=True, capture_output=True)
        subprocess.run([PY, "-m", "app", "seed"], cwd=ROOT, env=env, check=True, capture_output=True)
        if args.target == "static":
            app = Server("static", [PY, str(ROOT / "bench" / "static_server.py")], env, tmp / "static.log", "/mcp")
        else:
            app = Server("app", [PY, "-m", "app", "serve", "--workers", "1"], env, tmp / "app.log", "/readyz")
        app.start()
        try:
            for path in args.paths.split(","):
                token = app.token(args.case)
                call_once(app.url, args.case, path, token)  # answers correctly before it is timed
                script = wrk_script(tmp, args.case, path, token)
                collapsed = (args.keep or tmp) / f"{args.case}-{path}.collapsed.txt"
                collapsed.parent.mkdir(parents=True, exist_ok=True)
                spy = subprocess.Popen([pyspy, "record", "--pid", str(app.proc.pid), "--rate", str(args.rate),
                                        "--duration", str(args.seconds), "--format", "raw", "--nonblocking",
                                        *([] if args.all_threads else ["--gil"]), "--output", str(collapsed)],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                wrk = subprocess.run(["wrk", "-t", "1", "-c", str(args.concurrency), "-d", f"{args.seconds}s",
                                      "--latency", "-s", str(script), f"{app.url}/mcp"],
                                     capture_output=True, text=True, check=True)
                spy.wait(timeout=args.seconds + 30)
                rps = next((ln.split()[1] for ln in wrk.stdout.splitlines() if ln.startswith("Requests/sec")), "?")
                p99 = next((ln.split()[1] for ln in wrk.stdout.splitlines() if ln.strip().startswith("99%")), "?")
                summary = summarise(collapsed)
                print(f"\n== {args.target}: {args.case} on the {path} path: {rps} req/s, p99 {p99} "
                      f"(wrk c={args.concurrency}, {args.seconds} s; {summary['samples']} samples)")
                for area, share in summary["areas"]:
                    print(f"  {share * 100:5.1f}%  {area}")
                print("  hottest functions (self time):")
                for leaf, share in summary["leaves"]:
                    print(f"  {share * 100:5.1f}%  {leaf[:110]}")
        finally:
            app.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
