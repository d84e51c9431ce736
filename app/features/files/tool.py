"""MCP tools of the files feature. Anonymous callers may analyse files (kept for APP_FILES_ANON_TTL only); a
linked account with ``files.write`` keeps them in its library, where ``search`` finds their text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, Resource
from pydantic import Field

from app.auth.resource_server import current_subject, linked_account
from app.auth.schemes import NOAUTH, oauth2
from app.feature import Deps
from app.features.files import service
from app.features.files.analysis import compare
from app.features.files.ingest import FileRejected, Ingested, file_name_of
from app.features.files.progress import FileProgress
from app.features.files.schemas import (
    ChosenFile,
    Comparison,
    FileAnalysis,
    FileDeleted,
    FileInfo,
    FileLibrary,
    FileOpening,
    FileReference,
    FilesComparison,
    LibraryEntry,
    OpenAIFile,
    TypeConflict,
)
from app.features.files.usecases import FileUseCases
from app.mcp.budgets import ToolBudget
from app.mcp.entrypoints import OpenAIFileEntrypoint, OpenAIGlobalEntrypoint, quick_action
from app.mcp.errors import ToolFailure
from app.mcp.forms import Question, ask, must_ask, option, picker, picker_many, still_offered
from app.mcp.progress import Progress
from app.mcp.registry import MentionLink, MentionSource, ToolRegistry
from app.mcp.results import tool_result
from app.mcp.settings import SettingsGroup
from app.mcp.widgets import Widget, is_origin
from app.wording import Wording

say = Wording(__file__)
READ_SCOPE = "files.read"
WRITE_SCOPE = "files.write"
MAX_COMPARED = 5

# A file fetched (up to APP_FILES_MAX_BYTES) and analysed in a worker process is the expensive thing, whichever
# tool does it: both count against one budget, compare_files one unit a file.
FILE_BUDGET = ToolBudget("20/10 minutes", name="files")


def files_in(arguments: Mapping[str, Any]) -> int:
    files = arguments.get("files")
    return len(files) if isinstance(files, list) else 1


# Not nullable: ChatGPT fills a file param whose schema is the array of files itself
# (docs/chatgpt-contract.md, fileParams); left out, it is empty, never validated against its bounds.
FileList = Annotated[list[OpenAIFile], Field(
    min_length=2, max_length=MAX_COMPARED,
    description="The files to compare (2 to 5). Leave it out when the user has not attached them: "
    "a signed-in user picks them from their library.")]
NO_FILES: list[OpenAIFile] = []  # never changed: the default of a call without files
FileId = Annotated[
    Annotated[str, Field(max_length=40)] | None,
    Field(description="A file id from list_files. Leave it out when the user has not said which: "
          "they pick it from their library.")]
FILE_URI = "app://files/{file_id}"
PICKED = 100  # the newest files of a library a picker offers (and a mention search reads)
MENTIONED = 10  # kept files offered to an @-mention


def file_uri(file_id: str) -> str:
    return FILE_URI.format(file_id=file_id)


EXAMPLE = [option(file_uri("f_example"), "example.csv", "example.csv")]


# An empty or short library, by how many files it holds (0, 1, more) and what was asked of it.
HOLDS = {
    (0, "compare"): say.mark("Your library holds 0 files, so there is nothing to compare."),
    (1, "compare"): say.mark("Your library holds 1 file, so there is nothing to compare."),
    (0, "delete"): say.mark("Your library holds 0 files, so there is nothing to delete."),
}
COMPARED = Question(
    key="files",
    message=say("Which files should be compared?"),
    form=picker_many(EXAMPLE, least=2, most=MAX_COMPARED, title=say("Files"),
                     description=say("Files")),
    needs=say("Comparing files needs 2 to 5 files, and none were given."),
    instead="Ask the user to attach the files to compare (2 to 5), then call compare_files again "
            "with them in `files`.",
    declined=say("Nothing was compared: no files were chosen."),
)
DELETED = Question(
    key="file",
    message=say("Which file should be deleted from your library?"),
    form=picker(EXAMPLE, title=say("File"), description=say("The file to delete")),
    needs=say("Deleting a file needs to know which one, and none was named."),
    instead="Call list_files, ask the user which file to delete, then call delete_file again with "
            "`file_id` set to its id.",
    declined=say("Nothing was deleted: no file was chosen."),
)
Limit = Annotated[int, Field(ge=1, le=100, description="How many files to return, newest first")]


def file_info(row: service.FileRow) -> FileInfo:
    return FileInfo(id=row.id, name=row.file_name, kind=row.analysis_kind, mime_type=row.mime_type,
                    claimed_mime_type=row.claimed_mime_type, size=row.size, sha256=row.sha256, saved=row.saved,
                    created_at=service.iso(row.created_at) or "", expires_at=service.iso(row.expires_at))


async def reference(files: FileUseCases, row: service.FileRow) -> FileReference:
    url, mime = await files.reference(row)
    return FileReference(download_url=url, file_id=row.id, mime_type=mime, file_name=row.file_name)


async def analysis_of(files: FileUseCases, ingested: Ingested) -> FileAnalysis:
    rec = ingested.recorded
    return FileAnalysis(file=file_info(rec.upload), summary=rec.upload.summary, warnings=ingested.analysis.warnings,
                        report=await reference(files, rec.report))


def widget_analysis(ingested: Ingested) -> dict[str, Any]:
    a = ingested.analysis
    return {"file_id": ingested.recorded.upload.id, "kind": a.kind, "mime_type": a.mime_type, "details": a.details,
            "warnings": a.warnings}


def analysis_text(result: FileAnalysis, reused: bool) -> str:
    f = result.file
    kept = ("It was already in the user's library." if reused else "It is saved in the user's library.") \
        if f.saved else f"It is not kept: anonymous uploads are deleted at {f.expires_at}."
    warnings = f" Warnings: {'; '.join(result.warnings)}." if result.warnings else ""
    return f"{f.name} ({f.mime_type}, {f.size:,} bytes): {result.summary}{warnings} {kept}"


def comparison_of(ingested: list[Ingested]) -> Comparison:
    # compare() keys its answer by the file names, made unique where two files share one.
    return comparison_of_raw(compare([(i.recorded.upload.file_name, i.analysis) for i in ingested]))


def comparison_of_raw(raw: dict[str, Any]) -> Comparison:
    tabular = raw.get("tabular") or {}
    return Comparison(
        summary=str(raw.get("summary", "")),
        shared_columns=list(tabular.get("shared_columns", [])),
        only_in={k: list(v) for k, v in (tabular.get("only_in") or {}).items()},
        type_conflicts=[TypeConflict(column=c["column"], types=dict(c["types"]))
                        for c in tabular.get("type_conflicts", [])],
        # A table whose analysis stopped early (a value it could not read) has no row count.
        rows={k: int(v) for k, v in (tabular.get("rows") or {}).items()
              if isinstance(v, int) and not isinstance(v, bool)},
    )


def files_widget(link_origin: str) -> Widget:
    # An http origin off loopback (a LAN dev server, an http MinIO) is no redirect target ChatGPT
    # accepts; such a deployment is not reachable from ChatGPT anyway, so it is left out.
    return Widget(
        name="files",
        title="File analysis",
        description="Shows the file's analysis (columns and statistics, page text, image facts, warnings), a "
        "download of the report, and the user's file library; the user can see all of it.",
        # Downloads open where storage serves them (this app's /files/blob, or the S3 endpoint).
        redirect_domains=(link_origin,) if is_origin(link_origin) else (),
    )


# The quick action's icon: a folder, drawn in the host's text colour.
FILES_ICON = Path(__file__).with_name("my-files.svg")
# What a file entrypoint offers to open here: what the analysis reads (app/features/files/analysis).
OPENABLE = (".csv", ".tsv", ".txt", ".md", ".log", ".json", ".jsonl", ".ndjson", ".pdf", ".png",
            ".jpg", ".jpeg", ".gif", ".webp")


def register(registry: ToolRegistry, deps: Deps) -> None:
    lib = FileUseCases.of(deps)
    widget = files_widget(lib.storage.link_origin())

    async def ingest(file: OpenAIFile, owner: str | None, progress: FileProgress,
                     which: str = "") -> Ingested:
        try:
            return await lib.ingest(
                download_url=file.download_url,
                openai_file_id=file.file_id,
                file_name=file.file_name,
                claimed_mime_type=file.mime_type,
                owner=owner,
                progress=progress,
            )
        except FileRejected as exc:
            if not which:
                raise  # the registry makes it the call's error result
            # Only this call knows which of its files it was.
            raise exc.concerning(which) from None

    @registry.tool(
        name="analyze_file",
        title=say("Analyze file"),
        description="Analyzes a user-provided file without modifying it: detects its real type from its content "
        "and summarises it (text statistics, CSV columns and types, JSON structure, image size, PDF pages and "
        "text). Returns the full analysis as a JSON file by reference. With a linked account the file is kept "
        "in the user's library and its text becomes searchable with `search`.",
        read_only=True,
        destructive=False,
        open_world=False,
        security=[NOAUTH, oauth2(WRITE_SCOPE)],
        file_params=["file"],
        widget=widget,
        budget=FILE_BUDGET,
        invoking="Reading the file…",
        invoked="File analysed",
    )
    async def analyze_file(
        file: OpenAIFile, ctx: Context
    ) -> Annotated[CallToolResult, FileAnalysis]:
        progress = FileProgress(Progress.of(ctx))
        ingested = await ingest(file, current_subject(WRITE_SCOPE) or None, progress)
        result = await analysis_of(lib, ingested)
        return tool_result(result, analysis_text(result, ingested.recorded.reused),
                           {"analysis": widget_analysis(ingested)})

    @registry.tool(
        name="open_file",
        title=say("Open a file"),
        description="Opens a file the user chose on their computer in the files app, which "
        "reads it through ChatGPT and analyses it. ChatGPT calls it from a file entrypoint "
        "(Desktop).",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[NOAUTH, oauth2(WRITE_SCOPE)],
        widget=widget,
        # The host calls it, never the model: the model has no way to name such a file.
        visibility=["app"],
        entrypoints=[OpenAIFileEntrypoint(extensions=list(OPENABLE))],
        invoking="Opening the file…",
        invoked="File opened",
    )
    async def open_file(file: ChosenFile) -> Annotated[CallToolResult, FileOpening]:
        # Nothing is read here: the URI is the host's, and a path it may add in
        # _meta["openai/resource"] is one on the user's machine, never trusted. The widget reads
        # the bytes through the host, puts them in its file store and calls analyze_file
        # (docs/chatgpt-contract.md, "File entrypoints": our design, not the spec's).
        return tool_result(FileOpening(opening=file), f"Opening {file.name}: the files app reads "
                           "it through ChatGPT, then analyses it.")

    @registry.tool(
        name="compare_files",
        title=say("Compare files"),
        description="Analyzes 2 to 5 user-provided files and compares them: for CSV files, the columns they "
        "share, the columns only some have, columns whose types disagree, and row counts. Use it before "
        "merging or joining tables.",
        read_only=True,
        destructive=False,
        open_world=False,
        security=[NOAUTH, oauth2(WRITE_SCOPE)],
        file_params=["files"],
        widget=widget,
        budget=ToolBudget(FILE_BUDGET.rate, FILE_BUDGET.name, cost=files_in),
        invoking="Comparing the files…",
        invoked="Files compared",
    )
    async def compare_files(
        ctx: Context, files: FileList = NO_FILES
    ) -> Annotated[CallToolResult, FilesComparison]:
        owner = current_subject(WRITE_SCOPE) or None
        if not files:  # none attached: a signed-in person picks among the files they kept
            if owner is None:
                raise ToolFailure(COMPARED.needs, COMPARED.instead)
            return await compare_kept(ctx, owner)
        progress = FileProgress(Progress.of(ctx), files=len(files))
        # One at a time: each file is streamed to disk and analysed in a worker process; in parallel they would
        # multiply the disk and process footprint of a single call. All or nothing: when one fails, the files
        # this call already recorded are removed again.
        ingested: list[Ingested] = []
        try:
            for number, f in enumerate(files, start=1):
                which = say("File {number} ({name})", number=number,
                            name=file_name_of(f.file_name, f.download_url))
                ingested.append(await ingest(f, owner, progress, which))
        except BaseException:
            new = [i.recorded.upload for i in ingested if not i.recorded.reused]
            if new:
                with anyio.CancelScope(shield=True):
                    await lib.discard(new)
            raise
        results = [await analysis_of(lib, i) for i in ingested]
        comparison = comparison_of(ingested)
        output = FilesComparison(files=results, comparison=comparison)
        lines = [analysis_text(r, i.recorded.reused) for r, i in zip(results, ingested, strict=True)]
        return tool_result(output, comparison.summary + "\n" + "\n".join(lines),
                           {"analyses": [widget_analysis(i) for i in ingested]})

    async def choices(ctx: Context, question: Question[Any], owner: str, what: str,
                      least: int) -> list[Resource]:
        """The newest files of ``owner``'s library as a picker's choices (an image with itself as
        its thumbnail); a failure when there are fewer than ``least``. Where no form can be shown,
        the question's fallback first, before anything is read. A delete's retry sent twice finds
        the file its first copy deleted among them (``still_offered``); a comparison's does not
        need to (it deletes nothing)."""
        must_ask(ctx, question)
        rows, _ = await lib.library(owner, PICKED)
        gone = still_offered(ctx, question, [], "choice", file_uri(""))
        if len(rows) + len(gone) < least:
            # least is 2 (compare) or 1 (delete): fewer rows than that is 0 or 1, each in HOLDS.
            held = say(HOLDS[len(rows), what])
            raise ToolFailure(held,
                              "Tell the user; files they attach while signed in are kept in the "
                              "library. Do not call the tool again without files.")
        found = []
        for row in rows:
            image = row.mime_type.startswith("image/")
            thumbnail = (await lib.reference(row))[0] if image else None
            found.append(option(file_uri(row.id), row.file_name, row.file_name,
                                description=row.summary[:200] or None, thumbnail=thumbnail,
                                mime_type=row.mime_type))
        return still_offered(ctx, question, found, "choice", file_uri(""))

    async def compare_kept(ctx: Context, owner: str) -> CallToolResult:
        form = picker_many(await choices(ctx, COMPARED, owner, "compare", 2), least=2,
                           most=MAX_COMPARED, title=say("Files"),
                           description=say("Choose 2 to {most} files", most=MAX_COMPARED))
        picked = ask(ctx, COMPARED.with_form(form)).choices
        kept = []
        for uri in picked:
            found = await lib.kept(owner, uri.removeprefix(file_uri("")))
            if found is None:  # deleted since it was offered
                raise ToolFailure(say("One of the chosen files is no longer in the library, so "
                                      "nothing was compared."),
                                  "Call compare_files again to let the user "
                                  "choose again.")
            kept.append((found, await lib.kept_analysis(found[1])))
        results = [FileAnalysis(file=file_info(upload), summary=upload.summary,
                                warnings=analysis.warnings, report=await reference(lib, report))
                   for (upload, report), analysis in kept]
        raw = compare([(upload.file_name, analysis) for (upload, _), analysis in kept])
        comparison = comparison_of_raw(raw)
        output = FilesComparison(files=results, comparison=comparison)
        lines = [analysis_text(r, True) for r in results]
        widget = [{"file_id": upload.id, "kind": a.kind, "mime_type": a.mime_type,
                   "details": a.details, "warnings": a.warnings} for (upload, _), a in kept]
        return tool_result(output, comparison.summary + "\n" + "\n".join(lines),
                           {"analyses": widget})

    @registry.tool(
        name="list_files",
        title=say("List my files"),
        description="Lists the files in the user's library (files analysed while signed in), newest first, with "
        "a summary and a short-lived download link for each.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        security=[oauth2(READ_SCOPE)],
        widget=widget,
        # In ChatGPT's sidebar, with a shortcut straight to the library.
        entrypoints=[OpenAIGlobalEntrypoint(quick_action=quick_action(
            "My files", "list_files", FILES_ICON))],
        invoking="Opening your files…",
        invoked="Files ready",
    )
    async def list_files(limit: Limit = 20) -> Annotated[CallToolResult, FileLibrary]:
        rows, total = await lib.library(linked_account(say("The file library")), limit)
        entries = [LibraryEntry(file=file_info(r), summary=r.summary, download=await reference(lib, r))
                   for r in rows]
        output = FileLibrary(files=entries, total=total)
        if not entries:
            return tool_result(output, "The library is empty: files analysed while signed in are kept here.")
        names = ", ".join(f"{e.file.name} ({e.file.id})" for e in entries)
        more = f" (showing {len(entries)} of {total})" if total > len(entries) else ""
        return tool_result(output, f"{total} file{'s' if total != 1 else ''} in the library{more}: {names}.")

    @registry.tool(
        name="delete_file",
        title=say("Delete a file"),
        description="Deletes one file from the user's library by its id from list_files: its bytes, its analysis "
        "report and its search entry. Deleting a file that is not in the library changes nothing.",
        read_only=False,
        destructive=True,
        open_world=False,
        idempotent=True,
        security=[oauth2(WRITE_SCOPE)],
        widget=widget,
        invoking="Deleting the file…",
        invoked="File deleted",
    )
    async def delete_file(ctx: Context, file_id: FileId = None,
                          ) -> Annotated[CallToolResult, FileDeleted]:
        owner = linked_account(say("The file library"))
        if not file_id:  # the person picks one of their own files
            form = picker(await choices(ctx, DELETED, owner, "delete", 1), title=say("File"),
                          description=say("The file to delete from your library"))
            file_id = ask(ctx, DELETED.with_form(form)).choice.removeprefix(file_uri(""))
        chosen = file_id
        deleted = await lib.delete(owner, chosen)
        output = FileDeleted(deleted=deleted, file_id=chosen)
        text = (f"Deleted file {chosen} from the library." if deleted
                else f"File {chosen} is not in the library; nothing was deleted.")
        return tool_result(output, text)

    async def files_to_mention(query: str, owner: str | None) -> list[MentionLink]:
        """The account's kept files whose name holds what is typed, newest first."""
        assert owner is not None  # asked only with the read scope's subject
        rows, _ = await lib.library(owner, PICKED)
        typed = query.casefold()
        return [MentionLink(uri=file_uri(r.id), name=r.file_name, title=r.file_name,
                            description=r.summary[:160] or None, mimeType=r.mime_type)
                for r in rows if typed in r.file_name.casefold()][:MENTIONED]

    registry.mention_source(MentionSource("files", files_to_mention, READ_SCOPE))
    # A button among the settings: the person's files, in the files widget.
    registry.settings_group(SettingsGroup("Files", actions=("list_files",)))

    @registry.account_resource(
        FILE_URI,
        name="kept_file",
        title="Kept file",
        description="One file of the user's library: what it is, its summary, and a short-lived "
        "download link.",
        scopes=[READ_SCOPE],
    )
    async def kept_file(file_id: str) -> str | None:
        found = await lib.kept(linked_account(say("The file library")), file_id)
        if found is None:
            return None
        upload, _ = found
        entry = LibraryEntry(file=file_info(upload), summary=upload.summary,
                             download=await reference(lib, upload))
        return json.dumps(entry.model_dump(mode="json", exclude_none=True), ensure_ascii=False)
