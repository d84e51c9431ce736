"""The files feature over real HTTP on both storage backends: ChatGPT hands over a URL, the server fetches it
through the guard from a loopback file server (allow-listed), analyses it, stores it (a local folder, or S3 on
a moto server on loopback), and answers with references that really download."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import pytest

from app.db import Database
from app.features.files.settings import FilesSettings
from app.features.files.usecases import ORPHAN_GRACE, FileUseCases
from app.net.guard import OutboundGuard
from app.settings import load_part
from tests import filesamples as samples
from tests.challenges import CHATGPT_META, assert_http_challenge, plain_call
from tests.filehost import (
    ALICE,
    CAP,
    FETCH_TIMEOUT,
    Deployed,
    FileServer,
    call,
    download,
    file_arg,
    objects,
    ok,
    rows_for,
)

pytestmark = pytest.mark.demo("files")

# --- every kind, both backends, anonymous -------------------------------------------------------------------

KINDS = {
    "csv": (samples.csv_bytes(), "report.csv", "text/csv", "text/csv"),
    "pdf": (samples.pdf_bytes(["Revenue grew in March", "Costs fell in April"]), "q1.pdf", None, "application/pdf"),
    "png": (samples.png_bytes(64, 48), "chart.png", "image/png", "image/png"),
    "jsonl": (samples.jsonl_bytes(3), "events.jsonl", "application/jsonl", "application/x-ndjson"),
    "blob": (samples.blob_bytes(4096), "data.bin", None, "application/octet-stream"),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_analyze_file_reads_each_kind_and_the_report_downloads_by_reference(deployed: Deployed,
                                                                            file_server: FileServer, kind: str):
    body, name, claimed, sniffed = KINDS[kind]
    arg = file_arg(file_server.offer(body), name=name, mime=claimed)
    out = ok(anyio.run(call, deployed, "analyze_file", {"file": arg}))

    f = out["file"]
    assert (f["name"], f["mime_type"], f["size"]) == (name, sniffed, len(body))
    assert f["sha256"] == hashlib.sha256(body).hexdigest()
    assert f["saved"] is False and f["expires_at"]  # anonymous: kept for the TTL only
    # Left out when none was claimed (no null the tool did not write).
    assert f.get("claimed_mime_type", "absent") == (claimed or "absent")
    report = out["report"]
    assert set(report) == {"download_url", "file_id", "mime_type", "file_name"}
    assert report["mime_type"] == "application/json" and report["file_name"].endswith("-analysis.json")
    got = download(report["download_url"])
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].startswith("application/json")
    assert "attachment" in got.headers["content-disposition"]
    assert got.json()["file"] == {"id": f["id"], "name": name, "size": len(body), "sha256": f["sha256"],
                                  "mime_type": sniffed, "claimed_mime_type": claimed}
    analysis = got.json()["analysis"]
    assert analysis["mime_type"] == sniffed
    details = analysis["details"]
    expected = {
        "csv": lambda: (details["rows"], [c["name"] for c in details["columns"]], details["columns"][0]["type"])
        == (4, ["id", "name", "price", "in_stock", "added"], "integer"),
        "pdf": lambda: details["pages"] == 2 and "Revenue grew in March" in " ".join(details["first_pages_text"]),
        "png": lambda: (details["format"], details["width"], details["height"], details["mode"])
        == ("PNG", 64, 48, "RGBA"),
        "jsonl": lambda: details["records"] == 3 and details["invalid_lines"] == 0,
        "blob": lambda: details["sha256"] == hashlib.sha256(body).hexdigest(),
    }[kind]
    assert expected(), details
    assert rows_for(deployed, arg["file_id"]) == 1


def test_the_type_comes_from_the_bytes_not_the_name_or_the_claim(deployed: Deployed, file_server: FileServer):
    arg = file_arg(file_server.offer(samples.png_bytes(8, 8), claimed="text/csv"), name="totally.csv",
                   mime="text/csv")
    f = ok(anyio.run(call, deployed, "analyze_file", {"file": arg}))["file"]
    assert (f["kind"], f["mime_type"], f["claimed_mime_type"]) == ("image", "image/png", "text/csv")


def test_a_malformed_file_gives_a_partial_analysis_with_a_warning(deployed: Deployed, file_server: FileServer):
    pdf = samples.pdf_bytes(["first page text", "second page text"])
    arg = file_arg(file_server.offer(pdf[: len(pdf) // 2]), name="cut.pdf")
    out = ok(anyio.run(call, deployed, "analyze_file", {"file": arg}))
    assert out["file"]["kind"] == "pdf"
    assert out["warnings"], out


def test_content_no_database_keeps_as_text_is_reported_not_fatal(deployed: Deployed, file_server: FileServer):
    # A NUL in a JSON key and value, an unpaired surrogate, a NUL in a PDF's title: the file's own content, valid
    # JSON and PDF. PostgreSQL refuses NUL in text and no encoder writes a lone surrogate: each is shown as U+FFFD.
    document = b'{"a\\u0000b": 1, "title": "x\\u0000y", "\\ud800k": "\\ud800", "ok": "\xc3\xa9"}'
    pdf = samples.pdf_bytes(["text"], title="Nul\x00title")
    for body, name in ((document, "nul.json"), (pdf, "nul.pdf"), (b'{"k\\u0000": 1}\n{"k\\u0000": 2}\n', "nul.jsonl")):
        arg = file_arg(file_server.offer(body), name=name)
        out = ok(anyio.run(call, deployed, "analyze_file", {"file": arg}, "alice"))
        assert rows_for(deployed, arg["file_id"]) == 1, name
        report = download(out["report"]["download_url"]).json()
        text = repr(out) + repr(report)
        assert "\\x00" not in text and "\\ud800" not in text, text
        assert "\ufffd" in text, (name, text)


# --- accounts: library, search, delete ------------------------------------------------------------------

def test_a_signed_in_upload_joins_its_owners_library_only_and_deletes_with_its_bytes(
        deployed: Deployed, file_server: FileServer):
    body = f"A field note about migrations {uuid.uuid4().hex}.\nSecond line.\n".encode()
    arg = file_arg(file_server.offer(body, "text/plain"), name="notes.txt")
    out = ok(anyio.run(call, deployed, "analyze_file", {"file": arg}, "alice"))
    file_id = out["file"]["id"]
    assert out["file"]["saved"] is True and out["file"].get("expires_at") is None

    listed = ok(anyio.run(call, deployed, "list_files", {}, "alice"))
    [entry] = [e for e in listed["files"] if e["file"]["id"] == file_id]
    assert download(entry["download"]["download_url"]).content == body
    assert all(e["file"]["id"] != file_id for e in ok(anyio.run(call, deployed, "list_files", {}, "bob"))["files"])

    # bob cannot delete it; alice can, and then its row, its report and its bytes are gone.
    assert ok(anyio.run(call, deployed, "delete_file", {"file_id": file_id}, "bob"))["deleted"] is False
    key = deployed.inspect().key_for(hashlib.sha256(body).hexdigest())
    assert key in objects(deployed)
    assert ok(anyio.run(call, deployed, "delete_file", {"file_id": file_id}, "alice"))["deleted"] is True
    assert key not in objects(deployed)
    # S3 answers a presigned GET of a missing key 403 (AccessDenied: the link grants no ListBucket).
    assert download(entry["download"]["download_url"]).status_code == {"local": 404, "s3": 403}[deployed.backend]
    assert rows_for(deployed, arg["file_id"]) == 0
    assert all(e["file"]["id"] != file_id for e in ok(anyio.run(call, deployed, "list_files", {}, "alice"))["files"])


def test_the_same_content_twice_is_one_library_entry(deployed: Deployed, file_server: FileServer):
    body = f"same content {uuid.uuid4().hex}\n".encode()
    first = ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(body))}, "alice"))
    again = ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(body))}, "alice"))
    assert again["file"]["id"] == first["file"]["id"]
    assert again["report"]["file_id"] == first["report"]["file_id"]
    listed = ok(anyio.run(call, deployed, "list_files", {"limit": 100}, "alice"))["files"]
    assert [e["file"]["id"] for e in listed].count(first["file"]["id"]) == 1


def test_the_library_needs_its_scopes(deployed: Deployed, file_server: FileServer):
    # ChatGPT is told in the result; another client at HTTP level.
    anonymous = anyio.run(call, deployed, "list_files", {}, None, CHATGPT_META)
    assert anonymous.is_error is True and "mcp/www_authenticate" in (anonymous.meta or {})
    reader_delete = anyio.run(call, deployed, "delete_file", {"file_id": "file_x"}, "reader", CHATGPT_META)
    assert reader_delete.is_error is True and "files.write" in reader_delete.meta["mcp/www_authenticate"][0]
    base = deployed.mcp_url.removesuffix("/mcp")
    assert_http_challenge(plain_call(deployed.mcp_url, "list_files"), base, "files.read", signed_in=False)
    assert_http_challenge(plain_call(deployed.mcp_url, "delete_file", {"file_id": "file_x"}, token="reader"), base,
                          "files.write", signed_in=True)
    # Without files.write an upload is analysed but kept anonymously, never in the reader's library.
    out = ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(b"hello there\n"))},
                       "reader"))
    assert out["file"]["saved"] is False


def test_compare_files_lines_up_the_columns_of_several_csvs(deployed: Deployed, file_server: FileServer):
    a = file_arg(file_server.offer(b"id,name,price\n1,a,2.5\n2,b,3\n"), name="a.csv")
    b = file_arg(file_server.offer(b"id,name,qty\nx1,a,2\nx2,b,3\nx3,c,4\n"), name="b.csv")
    out = ok(anyio.run(call, deployed, "compare_files", {"files": [a, b]}))
    cmp = out["comparison"]
    assert cmp["shared_columns"] == ["id", "name"]
    assert cmp["only_in"] == {"a.csv": ["price"], "b.csv": ["qty"]}
    assert cmp["rows"] == {"a.csv": 2, "b.csv": 3}
    assert [c["column"] for c in cmp["type_conflicts"]] == ["id"]
    assert [f["file"]["name"] for f in out["files"]] == ["a.csv", "b.csv"]


def _sweeper(d: Deployed, db: Database, *, later: float) -> FileUseCases:
    ttl = load_part(FilesSettings, _env_file=None).anon_ttl
    return FileUseCases(db=db, storage=d.inspect(), guard=OutboundGuard(), documents=None, max_bytes=CAP,
                        fetch_timeout=1, anon_ttl=ttl, url_ttl=60, clock=lambda: time.time() + later, spool_dir=d.spool)


def test_the_sweeper_deletes_expired_uploads_keeps_shared_bytes_and_removes_old_orphans(
        deployed: Deployed, file_server: FileServer):
    ttl = load_part(FilesSettings, _env_file=None).anon_ttl
    short = f"short-lived {uuid.uuid4().hex}\n".encode()
    shared = f"kept by alice {uuid.uuid4().hex}\n".encode()
    anonymous = file_arg(file_server.offer(short))
    ok(anyio.run(call, deployed, "analyze_file", {"file": anonymous}))
    ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(shared))}))  # anonymous too
    ok(anyio.run(call, deployed, "analyze_file", {"file": file_arg(file_server.offer(shared))}, "alice"))  # kept
    storage = deployed.inspect()
    short_key, shared_key = (storage.key_for(hashlib.sha256(b).hexdigest()) for b in (short, shared))
    orphan_key = anyio.run(storage.put_bytes, f"orphan {uuid.uuid4().hex}".encode()).key  # no row: a crash
    deployed.spool.mkdir(exist_ok=True)
    killed = deployed.spool / f"upload-{uuid.uuid4().hex}.part"  # what a worker killed mid-fetch leaves
    killed.write_bytes(b"partial")
    db = Database(deployed.db.url)
    try:
        # Now: nothing has expired, and an orphan this young may still be an upload in flight.
        assert anyio.run(_sweeper(deployed, db, later=0).sweep).startswith("0 expired rows removed, ")
        assert {short_key, shared_key, orphan_key} <= objects(deployed) and killed.exists()
        # Past the TTL and the hour: the anonymous rows and their bytes go, except the bytes alice keeps.
        summary = anyio.run(_sweeper(deployed, db, later=ttl + ORPHAN_GRACE + 60).sweep)
    finally:
        db.dispose()
    assert rows_for(deployed, anonymous["file_id"]) == 0
    remaining = objects(deployed)
    assert short_key not in remaining and orphan_key not in remaining and shared_key in remaining
    assert not killed.exists()
    expired, deleted, orphans = (int(part.split()[0]) for part in summary.split(", ")[:3])
    assert expired >= 4 and deleted >= 3 and orphans >= 1, summary  # this test's rows; others' may add to them


def test_compare_files_is_all_or_nothing_and_names_the_file_that_failed(deployed: Deployed,
                                                                         file_server: FileServer):
    first = file_arg(file_server.offer(f"a,b\n1,{uuid.uuid4().hex}\n".encode()), name="first.csv")
    broken = file_arg(f"{file_server.origin}/gone", name="second.csv")
    third = file_arg(file_server.offer(b"a,b\n2,3\n"), name="third.csv")
    result = anyio.run(call, deployed, "compare_files", {"files": [first, broken, third]}, "alice")
    assert result.is_error is True
    assert "File 2 (second.csv): The file's server answered HTTP 404" in result.content[0].text
    assert rows_for(deployed, first["file_id"]) == 0  # the first file, already recorded, was removed again
    assert rows_for(deployed, third["file_id"]) == 0  # the third was never fetched
    listed = ok(anyio.run(call, deployed, "list_files", {"limit": 100}, "alice"))["files"]
    assert "first.csv" not in [e["file"]["name"] for e in listed]


# --- hostile URLs: each refused with a clear error, nothing recorded, nothing left on disk -------------------

def _hostile(o: str) -> dict[str, tuple[str, str]]:
    """Row -> (URL, what the error must say); ``o`` is the allow-listed loopback file server."""
    return {
        "http on a host not allow-listed": ("http://example.com/a.csv", "only https"),
        "loopback literal": ("https://127.0.0.1/a.csv", "private or internal address"),
        "IPv6 loopback": ("https://[::1]/a.csv", "private or internal address"),
        "10/8": ("https://10.1.2.3/a.csv", "private or internal address"),
        "172.16/12": ("https://172.16.5.4/a.csv", "private or internal address"),
        "192.168/16": ("https://192.168.1.1/a.csv", "private or internal address"),
        "cloud metadata": ("https://169.254.169.254/latest/meta-data/", "cloud metadata address"),
        "0.0.0.0": ("https://0.0.0.0/a.csv", "private or internal address"),
        "IPv4-mapped IPv6": ("https://[::ffff:127.0.0.1]/a.csv", "private or internal address"),
        "a name resolving to loopback": ("https://loopback.test/a.csv", "resolves to a non-public address"),
        "a name resolving to 10.0.0.1": ("https://private.test/a.csv", "resolves to a non-public address"),
        "a name resolving to the metadata service": ("https://metadata.test/", "resolves to a cloud metadata"),
        "one bad address among good ones": ("https://mixed.test/a.csv", "resolves to a non-public address"),
        "redirect to a private address": (f"{o}/redirect?to=https://10.0.0.1/x", "redirect from 127.0.0.1"),
        "redirect to loopback off the allow-list": (f"{o}/redirect?to=http://127.0.0.1:9/x",
                                                    "redirect from 127.0.0.1: only https is allowed"),
        "file://": ("file:///etc/passwd", "scheme 'file' not allowed"),
        "gopher://": ("gopher://127.0.0.1:70/_x", "scheme 'gopher' not allowed"),
        "declared larger than the cap": (f"{o}/declared-too-big", "larger than the 1 MB limit"),
        "chunked body larger than the cap": (f"{o}/chunked-too-big", "larger than the 1 MB limit"),
        "body past the cap with no length (read until close)": (f"{o}/lying-length", "larger than the 1 MB limit"),
        "a small Content-Length over a chunked body past the cap": (f"{o}/small-length-chunked-body",
                                                                     "larger than the 1 MB limit"),
        "trickle past the total timeout": (f"{o}/trickle", "timed out"),
        "HTTP error": (f"{o}/gone", "answered HTTP 404"),
    }


HOSTILE_ROWS = list(_hostile("http://origin.invalid"))
# What an anonymous caller is told of a fetch the network or the address policy ended: one sentence for all
# (a reason would tell open, closed and non-HTTP ports, or an internal name's address, apart).
NETWORK_ROWS = {row for row, (_, said) in _hostile("http://origin.invalid").items()
                if said in ("private or internal address", "cloud metadata address", "timed out")
                or said == "redirect from 127.0.0.1" or said.startswith("resolves to")}


@pytest.mark.parametrize("row", HOSTILE_ROWS)
def test_a_hostile_url_is_refused_with_a_clear_error(deployed: Deployed, file_server: FileServer, row: str):
    url, message = _hostile(file_server.origin)[row]
    before = objects(deployed)
    arg = file_arg(url)
    started = time.monotonic()
    # A linked account is told the reason; an anonymous caller the same, but for the network's (below).
    result = anyio.run(call, deployed, "analyze_file", {"file": arg}, "alice")
    assert result.is_error is True, result.structured_content
    assert message in result.content[0].text, result.content[0].text
    assert time.monotonic() - started < FETCH_TIMEOUT + 5
    assert rows_for(deployed, arg["file_id"]) == 0
    assert objects(deployed) == before
    assert list(deployed.spool.glob("upload-*")) == []  # nothing left behind, whatever the refusal


# A linked person reading French is told the reason in French too: the guard says its reasons
# (app/net/wording.json), nested ones included (a redirect's, an address a name resolves to).
FRENCH_REASONS = {
    "http on a host not allow-listed": ("seul https est autorisé", "only https"),
    "a name resolving to loopback": ("mène à une adresse non publique", "non-public address"),
    "cloud metadata": ("adresse des métadonnées du cloud", "cloud metadata address"),
    "redirect to loopback off the allow-list": (
        "redirection depuis 127.0.0.1 : seul https est autorisé", "only https is allowed"),
    "gopher://": ("le schéma 'gopher' n’est pas autorisé", "not allowed"),
    "trickle past the total timeout": ("(délai total dépassé)", "timeout"),
}


@pytest.mark.parametrize("row", sorted(FRENCH_REASONS))
def test_a_linked_person_is_told_why_in_their_language(deployed: Deployed, file_server: FileServer,
                                                       row: str):
    url, _ = _hostile(file_server.origin)[row]
    french, english = FRENCH_REASONS[row]
    result = anyio.run(call, deployed, "analyze_file", {"file": file_arg(url)}, "alice",
                       {"openai/locale": "fr-FR"})
    assert result.is_error is True
    told = result.content[0].text
    assert french in told and english not in told, told


@pytest.mark.parametrize("row", sorted(NETWORK_ROWS))
def test_an_anonymous_caller_is_told_one_sentence_whatever_the_network_did(deployed: Deployed,
                                                                            file_server: FileServer, row: str):
    url, reason = _hostile(file_server.origin)[row]
    result = anyio.run(call, deployed, "analyze_file", {"file": file_arg(url)})
    assert result.is_error is True
    told = result.content[0].text
    assert "The file could not be fetched from " in told and "check that its link is a public https URL" in told
    assert reason not in told, told



# --- descriptors -----------------------------------------------------------------------------------------------

async def _tools(d: Deployed) -> dict[str, dict]:
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(d.mcp_url), mode="legacy") as client:
        listed = await client.list_tools()
    return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools}


def test_the_file_tools_are_described_exactly_as_chatgpt_expects(deployed: Deployed):
    tools = anyio.run(_tools, deployed)
    analyze, compare = tools["analyze_file"], tools["compare_files"]
    file_object = analyze["inputSchema"]["$defs"]["OpenAIFile"]
    assert {name: {k: v for k, v in prop.items() if k not in ("title", "description", "maxLength")}
            for name, prop in file_object["properties"].items()} == {
        "download_url": {"type": "string"}, "file_id": {"type": "string"}, "mime_type": {"type": "string"},
        "file_name": {"type": "string"}}
    assert file_object["required"] == ["download_url", "file_id"]
    assert file_object["additionalProperties"] is False
    assert analyze["inputSchema"]["properties"] == {"file": {"$ref": "#/$defs/OpenAIFile"}}
    assert analyze["inputSchema"]["required"] == ["file"]
    assert analyze["_meta"]["openai/fileParams"] == ["file"]
    assert analyze["annotations"] | {"title": None} == {"title": None, "readOnlyHint": True, "destructiveHint": False,
                                                         "openWorldHint": False}
    assert analyze["outputSchema"]["required"] == ["file", "summary", "warnings", "report"]
    files = compare["inputSchema"]["properties"]["files"]
    assert (files["type"], files["items"], files["minItems"], files["maxItems"]) == (
        "array", {"$ref": "#/$defs/OpenAIFile"}, 2, 5)
    assert compare["inputSchema"]["$defs"]["OpenAIFile"] == file_object
    assert compare["_meta"]["openai/fileParams"] == ["files"]
    assert tools["delete_file"]["annotations"]["destructiveHint"] is True


# --- the sweep command ---------------------------------------------------------------------------------------

def _sweep_command(database_url: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "files", "sweep"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "APP_DATABASE_URL": database_url,
                                                       "APP_FILES_DIR": str(tmp_path / "files"),
                                                       "APP_STORAGE_DIR": str(tmp_path / "files"),
                                                       "APP_VAR_DIR": str(tmp_path / "var"), **env})


def test_files_sweep_prints_what_it_did(database_url: str, tmp_path: Path):
    proc = _sweep_command(database_url, tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert proc.stdout.startswith("files sweep: ") and proc.stdout.endswith(" interrupted writes cleaned up\n")


def test_files_sweep_with_storage_down_is_one_line(database_url: str, tmp_path: Path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = _sweep_command(database_url, tmp_path, APP_STORAGE_BACKEND="s3", APP_S3_BUCKET="bucket",
                          APP_S3_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_ACCESS_KEY_ID="test",
                          AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1",
                          AWS_EC2_METADATA_DISABLED="true")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.strip() == "files sweep: File storage is unavailable, please retry shortly."


def test_a_delete_leaves_bytes_another_upload_stored_again_since_to_the_sweeper(deployed: Deployed,
                                                                                file_server: FileServer):
    body = f"reused {uuid.uuid4().hex}\n".encode()
    port = file_server.server_address[1]
    db = Database(deployed.db.url)
    ten_minutes_ago = FileUseCases(db=db, storage=deployed.inspect(),
                                   guard=OutboundGuard(allowlist=[f"127.0.0.1:{port}"]), documents=None,
                                   max_bytes=CAP, fetch_timeout=5, anon_ttl=3600, url_ttl=60,
                                   clock=lambda: time.time() - 600)
    try:
        # A row recorded ten minutes ago whose object was stored again just now (the put of this very call is
        # "now" for the storage): as if another upload of the same bytes were about to commit its row.
        ingested = anyio.run(lambda: ten_minutes_ago.ingest(
            download_url=file_server.offer(body), openai_file_id=f"file_{uuid.uuid4().hex}", file_name="r.txt",
            claimed_mime_type=None, owner=ALICE))
        key = ingested.recorded.upload.storage_key
        assert anyio.run(ten_minutes_ago.delete, ALICE, ingested.recorded.upload.id) is True
    finally:
        db.dispose()
    assert key in objects(deployed)  # kept for the sweeper, which only deletes it once it is an hour old
