"""File analysis that no caller can monopolise, over real HTTP: while one anonymous caller sends
four costly PDFs at once, one of them runs, the other three are refused at once ("busy, retry in
N s") without being fetched, and a signed-in user's CSV completes before the costly one does.

Before (issue 38): four anonymous calls filled every analysis process, and a 12-byte CSV analysed
meanwhile took 91 s."""

from __future__ import annotations

import time
from collections.abc import Iterator

import anyio
import pytest
from mcp.server.auth.provider import AccessToken
from mcp.types import CallToolResult

from app.main import create_app
from app.net.guard import OutboundGuard
from app.settings import load_part, load_settings
from app.storage import LocalStorage
from tests import filesamples as samples
from tests.fakes import StaticTokenVerifier
from tests.filehost import ALICE, CAP, FETCH_TIMEOUT, Deployed, FileServer, call, file_arg, ok
from tests.serving import serving

pytestmark = pytest.mark.demo("files")


@pytest.fixture(scope="module")
def two_slots(
    database_url: str, file_server: FileServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployed]:
    from app.db import Database
    from app.features.files.settings import FilesSettings

    db = Database(database_url)
    root = tmp_path_factory.mktemp("fair")
    port = file_server.server_address[1]
    holder: dict = {}

    def build(base_url: str):
        token = AccessToken(
            token="alice",
            client_id="chatgpt",
            scopes=["files.read", "files.write"],
            subject=ALICE,
            resource=f"{base_url}/mcp",
        )
        settings = load_settings(
            database_url=database_url,
            base_url=base_url,
            log_format="json",
            outbound_allowlist=[f"127.0.0.1:{port}"],
            tool_budgets={"files": "100000/minute"},
            _env_file=None,
        )
        files = load_part(
            FilesSettings,
            max_bytes=CAP,
            fetch_timeout=FETCH_TIMEOUT,
            dir=str(root / "files"),
            analysis_slots=2,
            _env_file=None,
        )
        holder["storage"] = LocalStorage(root / "objects", base_url=base_url, secret=b"k" * 32)
        return create_app(
            settings,
            db=db,
            token_verifier=StaticTokenVerifier({"alice": token}),
            guard=OutboundGuard(allowlist=settings.outbound_allowlist),
            storage=holder["storage"],
            parts=[files],
        )

    with serving(build) as base_url:
        yield Deployed(
            f"{base_url}/mcp",
            holder["storage"],
            db,
            "local",
            lambda: holder["storage"],
            root / "files" / "spool",
        )
    db.dispose()


def test_one_anonymous_caller_cannot_keep_a_signed_in_users_csv_waiting(two_slots, file_server):
    bombs = [file_server.offer(samples.slow_pdf(), name=f"bomb-{i}.pdf") for i in range(4)]
    csv = file_server.offer(samples.csv_bytes(), name="small.csv")
    finished: dict[str, float] = {}
    results: dict[str, CallToolResult] = {}

    async def analyse(name: str, url: str, token: str | None) -> None:
        results[name] = await call(
            two_slots, "analyze_file", {"file": file_arg(url, name=name)}, token
        )
        finished[name] = time.monotonic()

    async def main() -> None:
        # Both analysis processes started first: what follows measures analyses, not start-ups.
        async with anyio.create_task_group() as tg:
            tg.start_soon(analyse, "warm-anonymous.csv", file_server.offer(b"a,b\n1,2\n"), None)
            tg.start_soon(analyse, "warm-alice.csv", file_server.offer(b"a,b\n1,2\n"), "alice")
        hits = file_server.hits
        finished["began"] = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i, url in enumerate(bombs):
                tg.start_soon(analyse, f"bomb-{i}.pdf", url, None)
            await anyio.sleep(0.5)  # the bombs are in
            tg.start_soon(analyse, "small.csv", csv, "alice")
        finished["fetches"] = file_server.hits - hits

    anyio.run(main)
    ran = [name for name in finished if name.startswith("bomb") and not results[name].is_error]
    refused = [name for name in finished if name.startswith("bomb") and results[name].is_error]
    assert ran and all(
        finished["small.csv"] < finished[name] for name in ran
    )  # before any bomb that ran
    assert len(ran) == 1 and len(refused) == 3, {n: r.content for n, r in results.items()}
    for name in refused:
        message, advice = (block.text for block in results[name].content)
        assert "Too many files are being analysed for you right now; nothing was fetched" in message
        assert "Try again in" in message and "call this tool again" in advice
        assert finished[name] - finished["began"] < 1.0  # at once, not after the running bomb
    assert ok(results["small.csv"])["file"]["mime_type"] == "text/csv"
    assert finished["fetches"] == 2  # one bomb and the CSV: the three refused were never fetched
