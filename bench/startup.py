"""How long `serve` takes to refuse a bad setting: the target is 2 s (issue 39), from the command
to its one line and exit 2, for a bad value of the core's settings and of a part's (the
authorization server's: every feature is imported before those are read).

    .venv/bin/python bench/startup.py [--rounds 5]

Prints, for each case, the line the server printed and the median and slowest of the rounds."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "core value": {"APP_LOG_LEVEL": "loud"},
    "part value": {"APP_OAUTH_ACCESS_TOKEN_TTL": "5"},
    "part value, misspelt name beside it": {"APP_OAUTH_ACCESS_TOKEN_TTL": "5",
                                            "APP_LOG_LEVLE": "debug"},
    # A name no core setting has: the features are imported to tell whether it is theirs.
    "core value, misspelt name beside it": {"APP_STORAGE_BACKEND": "s3", "APP_S3_BUKET": "x"},
}
TARGET = 2.0


def one(env: dict[str, str], cwd: str) -> tuple[float, str, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "app", "serve", "--port", "18987"], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                          capture_output=True, text=True, timeout=60)
    return time.perf_counter() - started, done.stderr.strip(), done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as cwd:  # no .env of the checkout's, no database written
        for name, env in CASES.items():
            times, lines, codes = [], set(), set()
            for _ in range(args.rounds):
                seconds, stderr, code = one(env, cwd)
                times.append(seconds)
                lines.add(stderr)
                codes.add(code)
            worst = max(worst, max(times))
            print(f"{name}: median {statistics.median(times):.2f} s, slowest {max(times):.2f} s, "
                  f"exit {sorted(codes)}")
            for line in sorted(lines):
                print(f"    {line}")
    print(f"target: every refusal within {TARGET:.0f} s: {'met' if worst <= TARGET else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
