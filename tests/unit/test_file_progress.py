"""What the files feature reports while it fetches and analyses (app.features.files.progress), and
the
analysis process's side of it (app.features.files.analysis.decoding.reporting)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from app.features.files.analysis import analyze
from app.features.files.analysis.decoding import REPORT_STEP, read_position
from app.features.files.ingest import SPOOL_PREFIX, SPOOL_SUFFIX, Spooled
from app.features.files.progress import FileProgress
from app.features.files.slots import AnalysisStopped
from app.features.files.usecases import FileUseCases
from app.limits import Caller
from app.mcp.progress import Progress
from tests.fakes import ProgressSink

pytestmark = pytest.mark.demo("files")
ALICE = Caller.of("alice", None)


def test_several_files_count_their_sizes_twice_and_the_total_is_known_with_the_last():
    send = ProgressSink()
    sent = send.sent
    files = FileProgress(Progress(send, interval=0), files=2)

    async def run() -> None:
        files.next_file()
        await files.fetched(400, 1000)
        await files.analysed(0, 1000)
        await files.analysed(1000, 1000, done=True)
        files.next_file()
        await files.fetched(10, None)  # no length declared: no total yet
        await files.fetched(50, None)
        await files.analysed(50, 50, done=True)

    anyio.run(run)
    assert [(done, total) for done, total, _ in sent] == [
        (400, None),
        (1000, None),
        (2000, None),
        (2010, None),
        (2050, None),
        (2100, 2100),
    ]
    assert sent[0][2] == "Downloading file 1 of 2: 0.0 MB of 0.0 MB"
    assert sent[-1][2] == "Analysing file 2 of 2: 0.0 MB of 0.0 MB"


def test_the_analysis_writes_how_far_it_has_read(tmp_path: Path):
    data = tmp_path / "big.csv"
    data.write_bytes(b"n,word\n" + b"".join(b"%d,w%d\n" % (i, i) for i in range(200_000)))
    where = tmp_path / "big.progress"
    where.write_bytes(b"")
    assert read_position(where) == 0
    analysis = analyze(data, file_name="big.csv", progress_path=where)
    assert analysis.kind == "csv"
    size = data.stat().st_size
    assert size - REPORT_STEP < read_position(where) <= size


def test_without_a_progress_file_nothing_is_written(tmp_path: Path):
    data = tmp_path / "small.csv"
    data.write_bytes(b"a,b\n1,2\n")
    assert analyze(data, file_name="small.csv").kind == "csv"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.csv"]


@pytest.mark.parametrize("text", [b"", b"   ", b"x1"])
def test_a_position_not_yet_written_reads_as_nothing(tmp_path: Path, text: bytes):
    where = tmp_path / "p"
    where.write_bytes(text)
    assert read_position(where) == 0


class StoppedSlots:
    """The analysis processes' fake: every analysis stopped at its cap, as AnalysisSlots stops
    one."""

    memory_bytes = None

    async def run(self, caller: object, func: object, *args: object) -> None:
        await anyio.sleep(0.3)  # long enough for the position to be read once
        raise AnalysisStopped(
            "Analysing the file took more than 1 s of processor time and was stopped; "
            "nothing was kept.",
            "Tell the user this file is too complex to analyse here.",
        )


def test_an_analysis_stopped_while_reporting_is_the_same_refusal_and_leaves_no_file(tmp_path: Path):
    """Raised inside the task group that reads the position, it would come out wrapped in an
    ExceptionGroup,
    which no ``except FileRejected`` catches: the model would read a crash instead of the
    refusal."""
    spooled = tmp_path / f"{SPOOL_PREFIX}x{SPOOL_SUFFIX}"
    spooled.write_bytes(b"a,b\n1,2\n")
    send = ProgressSink()
    sent = send.sent
    lib = FileUseCases(
        db=None,
        storage=None,
        guard=None,
        documents=None,
        max_bytes=1024,  # type: ignore[arg-type]
        fetch_timeout=1,
        anon_ttl=60,
        url_ttl=60,
        slots=StoppedSlots(),
    )  # type: ignore[arg-type]
    files = FileProgress(Progress(send, interval=0))
    files.next_file()

    async def run() -> None:
        with pytest.raises(AnalysisStopped) as stopped:
            await lib._analyse_reporting(Spooled(spooled, 8, "0" * 64), "x.csv", ALICE, files)
        assert stopped.value.message.startswith("Analysing the file took more than 1 s")

    anyio.run(run)
    assert sorted(p.name for p in tmp_path.iterdir()) == [spooled.name]  # the position file is gone
    assert all(
        total is None or done < total for done, total, _ in sent
    )  # no "done" after a refusal
