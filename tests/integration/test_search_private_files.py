"""Two features together: a file kept in an account's library is found by that account's `search`, by nobody
else's, and no longer once deleted. A fork without search or without files deletes this module with them."""

from __future__ import annotations

import uuid

import anyio
import pytest

from tests.filehost import Deployed, FileServer, call, file_arg, ok

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


def test_an_anonymous_upload_is_never_searchable(deployed: Deployed, file_server: FileServer):
    word = f"kestrel{uuid.uuid4().hex[:6]}"
    ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(f"{word} notes\n".encode()))}))
    for token in ("alice", "bob", None):
        assert ok(anyio.run(call, deployed, "search", {"q": word}, token))["results"] == []
