"""The analysis processes: shares per caller and for all anonymous callers, a bounded wait for a
free slot, the processor-time and memory caps inside a real worker process
(``anyio.to_process``)."""

from __future__ import annotations

import functools
import os
import resource
import time
from contextlib import ExitStack

import anyio
import anyio.lowlevel
import pytest
from PIL import Image

from app.features.files.analysis.core import analyze
from app.features.files.analysis.model import Analysis
from app.features.files.slots import AnalysisBusy, AnalysisSlots, AnalysisStopped, MiB
from app.limits import Caller

pytestmark = pytest.mark.demo("files")

ANON_A = Caller.of(None, "203.0.113.5", hint="subject-1")
ANON_A_OTHER_HINT = Caller.of(None, "203.0.113.5", hint="subject-2")
ANON_B = Caller.of(None, "198.51.100.7")
ALICE = Caller.of("alice", "203.0.113.5")
BOB = Caller.of("bob", "203.0.113.5")


def spin(seconds: float) -> str:
    """Processor time, in the analysis process (module level: the process imports it by name)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return "done"


def cpu_limit() -> tuple[int, int, float, int]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return (*resource.getrlimit(resource.RLIMIT_CPU), usage.ru_utime + usage.ru_stime, os.getpid())


def pid() -> int:
    return os.getpid()


def allocate(mib: int) -> int:
    """``mib`` MiB held at once, in the analysis process: their length."""
    block = bytearray(mib * MiB)
    return len(block)


KEPT: list[bytearray] = []


def keep(mib: int) -> int:
    """``mib`` MiB the analysis process keeps after the call."""
    KEPT.append(bytearray(mib * MiB))
    return len(KEPT[-1])


def space_limit() -> tuple[int, int, int]:
    with open("/proc/self/statm", "rb") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    return (*resource.getrlimit(resource.RLIMIT_AS), mapped)


async def started() -> int:
    """The analysis process, started (its interpreter and imports: seconds on a loaded machine)
    under a wall bound of its own, before a test's tight one: its pid. The processes are the
    event loop's, whichever slots run in them."""
    return await AnalysisSlots(1, 20.0).run(ALICE, pid)


async def _hold(
    slots: AnalysisSlots,
    caller: Caller,
    release: anyio.Event,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """A call of ``caller``'s, analysing until ``release``."""
    with slots.claim(caller):
        async with slots.slot(caller):
            task_status.started()
            await release.wait()


def test_one_caller_has_at_most_its_share_of_calls_a_new_hint_narrowing_it_only():
    async def main() -> None:
        slots = AnalysisSlots(4, 20.0)  # a caller 2, anonymous callers together 2
        release = anyio.Event()
        with slots.claim(ANON_A):  # fetching, not analysing yet: its share counts already
            await anyio.lowlevel.checkpoint()
            async with anyio.create_task_group() as tg:
                await tg.start(_hold, slots, ANON_A, release)
                with pytest.raises(AnalysisBusy) as busy:
                    with slots.claim(ANON_A):
                        pass
                assert "for you right now; nothing was fetched or kept" in busy.value.message
                assert 5 <= busy.value.retry_after <= 20
                # Another hint at the same address is a caller of its own (anonymous ChatGPT users
                # share OpenAI's addresses), within what all anonymous callers may analyse.
                await tg.start(_hold, slots, ANON_A_OTHER_HINT, release)
                with pytest.raises(AnalysisBusy) as busy:
                    with slots.claim(Caller.of(None, "203.0.113.5", hint="subject-3")):
                        pass
                assert "not signed in right now; nothing was fetched or kept" in busy.value.message
                with slots.claim(ALICE):  # an account is a share of its own, at the same address
                    async with slots.slot(ALICE):
                        pass
                release.set()
        with slots.claim(ANON_A):  # given back
            pass

    anyio.run(main)


def test_all_anonymous_callers_together_analyse_at_most_their_share():
    async def main() -> None:
        slots = AnalysisSlots(4, 20.0, per_caller=1)
        release = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(_hold, slots, ANON_A, release)
            await tg.start(_hold, slots, ANON_B, release)
            other = Caller.of(None, "192.0.2.9")
            with pytest.raises(AnalysisBusy) as busy:
                slots.check(other)  # before its fetch
            assert "not signed in" in busy.value.message
            assert "call this tool again" in busy.value.advice
            with pytest.raises(AnalysisBusy) as busy:  # after it, when the share filled meanwhile
                async with slots.slot(other):
                    pass
            assert "not signed in right now; nothing was kept" in busy.value.message
            await tg.start(_hold, slots, ALICE, release)
            await tg.start(_hold, slots, BOB, release)
            release.set()
        slots.check(Caller.of(None, "192.0.2.9"))  # all released: admitted again

    anyio.run(main)


def test_a_call_within_its_share_waits_for_a_slot_only_so_long():
    async def main() -> None:
        slots = AnalysisSlots(2, 20.0, per_caller=2, anonymous=2, wait=0.2)
        release = anyio.Event()
        async with anyio.create_task_group() as tg:
            await tg.start(_hold, slots, ALICE, release)
            await tg.start(_hold, slots, ALICE, release)
            began = time.monotonic()
            with pytest.raises(AnalysisBusy) as busy:
                async with slots.slot(BOB):
                    pass
            assert 0.15 < time.monotonic() - began < 2
            assert busy.value.message.startswith("Too many files are being analysed right now")
            release.set()
        with slots.claim(ANON_A):  # the shares were given back, busy or not
            async with slots.slot(ANON_A):
                assert (slots._held, slots._anonymous_held) == (
                    {ANON_A.key: 1, "address:203.0.113.5": 1}, 1)
        assert not slots._held and slots._anonymous_held == 0

    anyio.run(main)


def test_an_analysis_past_its_processor_time_is_stopped_and_the_process_serves_the_next():
    async def main() -> None:
        first = await started()
        # The wall-clock bound far off: on a machine as busy as CI's (five processes on two
        # cores), a second of processor time took more than the default 8 s of the clock.
        slots = AnalysisSlots(1, 1.0, wall=120)
        with pytest.raises(AnalysisStopped) as stopped:
            await slots.run(ALICE, spin, 60.0)
        # The cap, not the wall-clock bound, whose message differs.
        assert "1 s of processor time" in stopped.value.message
        # The same process (one slot) runs the next calls, each with a second from its own start:
        # the hard limit is never lowered (it could not be raised again).
        assert await slots.run(ALICE, spin, 0.1) == "done"
        soft, hard, used, same = await slots.run(ALICE, cpu_limit)
        assert same == first
        assert hard == resource.getrlimit(resource.RLIMIT_CPU)[1]  # as inherited, never lowered
        assert used + 0.5 < soft <= used + 2  # whole seconds: the cap rounded up

    anyio.run(main)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="the memory cap is Linux's")
def test_an_analysis_past_its_memory_is_stopped_and_a_fresh_process_serves_the_next():
    async def main() -> None:
        slots = AnalysisSlots(1, 20.0, memory_bytes=64 * MiB)
        first = await slots.run(ALICE, pid)
        assert await slots.run(ALICE, allocate, 40) == 40 * MiB  # within the cap
        with pytest.raises(AnalysisStopped) as stopped:
            await slots.run(ALICE, allocate, 200)
        assert stopped.value.message == (
            "Analysing the file needed more than 64 MiB of memory, or its process ended "
            "otherwise, and was stopped; nothing was kept."
        )
        # What the allocator kept of the failed call would count against the next: that process
        # ended, and a fresh one serves, its cap counted from what it mapped at its first call.
        soft, hard, mapped = await slots.run(ALICE, space_limit)
        assert await slots.run(ALICE, pid) != first
        assert hard == resource.getrlimit(resource.RLIMIT_AS)[1]  # as inherited, never lowered
        assert mapped - 16 * MiB < soft - 64 * MiB <= mapped
        assert await slots.run(ALICE, allocate, 40) == 40 * MiB

    anyio.run(main)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="the memory cap is Linux's")
def test_what_one_analysis_leaves_mapped_counts_against_the_next():
    # Counted from each call's start, a worker fed bombs in turn grew by 20 MiB a call.
    async def main() -> None:
        slots = AnalysisSlots(1, 20.0, memory_bytes=64 * MiB)
        first = await slots.run(ALICE, pid)
        assert await slots.run(ALICE, keep, 40) == 40 * MiB  # left mapped by the process
        with pytest.raises(AnalysisStopped):
            await slots.run(ALICE, allocate, 40)  # 40 + 40 past 64: from its first call
        assert await slots.run(ALICE, pid) != first

    anyio.run(main)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="the memory cap is Linux's")
def test_an_image_whose_pixels_pass_the_memory_cap_is_reported_from_its_header(tmp_path):
    # 3,000 x 3,000 RGBA: 36 MB of pixels from a 35 KB file, under a 32 MiB cap.
    png = tmp_path / "wide.png"
    Image.new("RGBA", (3000, 3000), (1, 2, 3, 4)).save(png)

    async def main() -> Analysis:
        slots = AnalysisSlots(1, 20.0, memory_bytes=32 * MiB)
        return await slots.run(ALICE, functools.partial(analyze, png, file_name="wide.png"))

    analysis = anyio.run(main)
    assert analysis.summary == "PNG image, 3,000×3,000 pixels, mode RGBA; too large to decode."
    assert analysis.details["decoded"] is False and analysis.details["width"] == 3000
    assert analysis.warnings == ["decoding its pixels needs more memory than an analysis may use: "
                                 "not decoded"]


def test_a_webp_past_the_memory_is_not_opened_and_its_size_is_read_from_its_header(tmp_path):
    # Pillow's WebP decoder allocates its canvas, and more, as it opens the file: 2,000 x 2,000
    # takes about 64 MB there, past a 32 MiB cap; without a cap it is decoded.
    webp = tmp_path / "wide.webp"
    Image.new("RGB", (2000, 2000), (1, 2, 3)).save(webp, lossless=True)
    capped = analyze(webp, file_name="wide.webp", memory_bytes=32 * MiB)
    assert capped.summary == "WEBP image, 2,000×2,000 pixels; too large to decode."
    assert (capped.details["width"], capped.details["height"]) == (2000, 2000)
    assert capped.details["decoded"] is False
    assert capped.warnings == ["image declares 2,000×2,000 pixels, more than can be decoded here: "
                               "not decoded"]
    whole = analyze(webp, file_name="wide.webp")
    assert whole.details["decoded"] is True and whole.details["mode"] == "RGB"


def test_time_waiting_for_a_slot_is_not_processor_time():
    async def main() -> None:
        await started()
        slots = AnalysisSlots(1, 1.5, per_caller=2, anonymous=2, wait=10)
        results: list[str] = []

        async def one() -> None:
            results.append(await slots.run(ALICE, spin, 1.0))

        async with (
            anyio.create_task_group() as tg
        ):  # the second waits ~1 s, then spins 1 s: within 1.5
            tg.start_soon(one)
            tg.start_soon(one)
        assert results == ["done", "done"]

    anyio.run(main)


def test_hints_rotated_at_one_address_start_only_so_many_calls():
    slots = AnalysisSlots(4, 20.0)  # anonymous callers 2: an address 4 calls at once
    with ExitStack() as stack:
        for n in range(4):
            stack.enter_context(slots.claim(Caller.of(None, "203.0.113.5", hint=f"s{n}")))
        with pytest.raises(AnalysisBusy) as busy:
            with slots.claim(Caller.of(None, "203.0.113.5", hint="s9")):
                pass
        assert "not signed in" in busy.value.message
        with slots.claim(Caller.of(None, "198.51.100.7", hint="s9")):  # another address
            pass
        with slots.claim(ALICE):  # an account at that address
            pass
    with slots.claim(Caller.of(None, "203.0.113.5", hint="s9")):  # given back
        pass

