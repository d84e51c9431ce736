"""SQLite's writers take turns through a lock file (app.db.locks.WriteTurns) before SQLite's own lock: in order,
across threads and processes, and never stuck behind a holder for longer than the busy timeout."""

from __future__ import annotations

import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.db.locks import WriteTurns


def test_a_second_writer_waits_for_the_first_to_end_its_turn(tmp_path: Path):
    turns = WriteTurns(str(tmp_path / "app.db"), timeout=10)
    order: list[str] = []
    holding = threading.Event()

    def first() -> None:
        with turns.turn():
            order.append("first in")
            holding.set()
            time.sleep(0.3)  # the second writer arrives meanwhile
            order.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    holding.wait(5)
    with turns.turn():
        order.append("second in")
    thread.join()
    assert order == ["first in", "first out", "second in"]


def test_a_writer_in_another_process_waits_its_turn(tmp_path: Path):
    database = str(tmp_path / "app.db")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from app.db.locks import WriteTurns\n"
        f"t = WriteTurns({database!r}, 10)\n"
        "with t.turn():\n"
        "    print('holding', flush=True); time.sleep(0.8)\n")], stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        with WriteTurns(database, timeout=10).turn():
            waited = time.monotonic() - started
        assert 0.3 < waited < 5  # until the other process's turn ended, not the timeout
    finally:
        holder.wait(10)


def test_after_the_timeout_a_writer_goes_on_and_leaves_it_to_sqlite(tmp_path: Path):
    turns = WriteTurns(str(tmp_path / "app.db"), timeout=0.3)
    release = threading.Event()
    holding = threading.Event()

    def stuck() -> None:
        with turns.turn():
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=stuck)
    thread.start()
    try:
        holding.wait(5)
        started = time.monotonic()
        with turns.turn():
            waited = time.monotonic() - started
        assert 0.25 < waited < 3
    finally:
        release.set()
        thread.join()


def test_a_directory_that_cannot_hold_the_lock_file_leaves_writers_to_sqlite(tmp_path: Path):
    turns = WriteTurns(str(tmp_path / "missing" / "app.db"), timeout=10)
    with turns.turn():
        pass  # no lock file, no error: SQLite says what it thinks of that directory


def test_the_database_s_writes_on_a_sqlite_file_take_their_turn(tmp_path: Path):
    from app.db.database import Database

    database = tmp_path / "app.db"
    db = Database(f"sqlite:///{database}")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from app.db.locks import WriteTurns\n"
        f"with WriteTurns({str(database)!r}, 10).turn():\n"
        "    print('holding', flush=True); time.sleep(0.8); print('releasing', flush=True)\n")],
        stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        db.read_sync(lambda uow: None)  # reads take no turn: done while the other process still holds it
        assert select.select([holder.stdout], [], [], 0)[0] == []
        db.write_sync(lambda uow: None)
        # The write waited for the other process's turn: what it said just before ending it is there to read.
        assert select.select([holder.stdout], [], [], 0)[0] == [holder.stdout]
        assert holder.stdout.readline().strip() == "releasing"
    finally:
        holder.wait(10)
        db.dispose()


def test_a_file_system_that_cannot_lock_leaves_writers_to_sqlite_and_says_so_once(tmp_path: Path, monkeypatch,
                                                                                    json_log):
    import errno

    from app.db import locks

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(locks.fcntl, "flock", no_locks)
    turns = WriteTurns(str(tmp_path / "app.db"), timeout=10)
    for _ in range(3):
        with turns.turn():
            pass
    assert [e["error"] for e in json_log() if e["event"] == "db.write_turns_unavailable"] == ["OSError"]


def test_a_database_in_memory_takes_no_turn_and_leaves_no_lock_file(tmp_path: Path, monkeypatch):
    from app.db.database import Database

    monkeypatch.chdir(tmp_path)  # where a lock file named after an in-memory database would land
    for url in ("sqlite://", "sqlite:///:memory:"):
        db = Database(url)
        try:
            db.write_sync(lambda uow: None)
        finally:
            db.dispose()
    assert list(tmp_path.iterdir()) == []
    db = Database(f"sqlite:///{tmp_path / 'app.db'}")  # a file has its turns beside it
    try:
        db.write_sync(lambda uow: None)
    finally:
        db.dispose()
    assert (tmp_path / "app.db-writeturn").exists()
