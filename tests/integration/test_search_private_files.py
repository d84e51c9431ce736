"""Two features together: a file kept in an account's library is found by that account's `search`, by nobody
else's, and no longer once deleted. A fork without search or without files deletes this module with them."""

from __future__ import annotations

import uuid

import anyio
import pytest

from app.db import UnitOfWork
from app.features.files.repository import FileRepository
from app.main import build_deps, discover_features
from app.parts import forget_everywhere
from app.settings import load_settings
from tests.filehost import BOB, Deployed, FileServer, call, file_arg, ok

pytestmark = pytest.mark.demo("files", "search")


def test_a_kept_files_text_is_searchable_by_its_owner_only_until_deleted(deployed: Deployed,
                                                                        file_server: FileServer):
    word = f"zebrafinch{uuid.uuid4().hex[:6]}"
    body = f"A field note about the {word} migration.\nSecond line.\n".encode()
    out = ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(body), name="n.txt")},
                       "alice"))
    file_id = out["file"]["id"]

    [hit] = ok(anyio.run(call, deployed, "search", {"q": word}, "alice"))["results"]
    assert (hit["id"], hit["title"], hit["url"]) == (f"file:{file_id}", "n.txt", f"files:{file_id}")
    assert word in hit["snippet"]
    assert ok(anyio.run(call, deployed, "search", {"q": word}, "bob"))["results"] == []
    assert ok(anyio.run(call, deployed, "search", {"q": word}))["results"] == []

    assert ok(anyio.run(call, deployed, "delete_file", {"file_id": file_id}, "alice"))["deleted"] is True
    assert ok(anyio.run(call, deployed, "search", {"q": word}, "alice"))["results"] == []


def test_an_account_that_leaves_its_own_documents_out_of_search_finds_public_pages_only(
        deployed: Deployed, file_server: FileServer):
    word = f"nightjar{uuid.uuid4().hex[:6]}"
    ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(
        file_server.offer(f"{word} notes\n".encode()), name="notes.txt")}, "alice"))
    assert len(ok(anyio.run(call, deployed, "search", {"q": word}, "alice"))["results"]) == 1
    ok(anyio.run(call, deployed, "update_settings", {"set": {"search_mine": False}}, "alice"))
    try:
        assert ok(anyio.run(call, deployed, "search", {"q": word}, "alice"))["results"] == []
        pages = ok(anyio.run(call, deployed, "search", {"q": "json dumps"}, "alice"))["results"]
        assert pages and all(p["url"].startswith("https://") for p in pages)
    finally:
        ok(anyio.run(call, deployed, "update_settings", {"set": {"search_mine": True}}, "alice"))
    assert len(ok(anyio.run(call, deployed, "search", {"q": word}, "alice"))["results"]) == 1


def test_an_anonymous_upload_is_never_searchable(deployed: Deployed, file_server: FileServer):
    word = f"kestrel{uuid.uuid4().hex[:6]}"
    ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(f"{word} notes\n".encode()))}))
    for token in ("alice", "bob", None):
        assert ok(anyio.run(call, deployed, "search", {"q": word}, token))["results"] == []


def test_an_account_deleted_takes_its_library_and_its_search_documents_with_it(
        deployed: Deployed, file_server: FileServer):
    """What /account's deletion runs for the features (app.parts.forget_everywhere), in one unit
    of work: the files of the account go, with their reports and search documents; another
    account's stay."""
    word = f"wagtail{uuid.uuid4().hex[:6]}"
    for token in ("alice", "bob"):
        ok(anyio.run(call, deployed, "analyze_file",
                     {"file": file_arg(file_server.offer(f"{word} {token}\n".encode()))}, token))
    features = discover_features()
    deps = build_deps(load_settings(_env_file=None), deployed.db, features,
                      storage=deployed.inspect())

    def rows(uow: UnitOfWork) -> int:
        files = uow.repository(FileRepository)
        return len(files.with_children(files.owned_ids(BOB)))

    owned = deployed.db.read_sync(rows)
    assert owned == 2  # the upload and its report
    assert len(ok(anyio.run(call, deployed, "search", {"q": word}, "bob"))["results"]) == 1
    removed = deployed.db.write_sync(lambda uow: forget_everywhere(features, deps)(uow, BOB))
    assert (removed, deployed.db.read_sync(rows)) == (owned, 0)
    assert ok(anyio.run(call, deployed, "list_files", {}, "bob"))["files"] == []
    assert ok(anyio.run(call, deployed, "search", {"q": word}, "bob"))["results"] == []
    assert len(ok(anyio.run(call, deployed, "search", {"q": word}, "alice"))["results"]) == 1
