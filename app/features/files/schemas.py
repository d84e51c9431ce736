"""Tool inputs and outputs. ``OpenAIFile`` is ChatGPT's file object (docs/chatgpt-contract.md §2)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema


def _no_null_defaults(schema: dict[str, Any]) -> None:
    # The optional fields are strings that may be omitted; a "default": null would contradict "type": "string".
    for prop in schema.get("properties", {}).values():
        if prop.get("default", ...) is None:
            del prop["default"]


OptionalString = Annotated[str | None, WithJsonSchema({"type": "string"})]


class OpenAIFile(BaseModel):
    """A file ChatGPT hands to a tool: all four properties declared, exactly download_url and file_id required."""

    model_config = ConfigDict(extra="forbid", title="OpenAIFile", json_schema_extra=_no_null_defaults)

    download_url: Annotated[str, Field(max_length=8192, description="Temporary URL to fetch the file from")]
    file_id: Annotated[str, Field(max_length=255, description="ChatGPT's id of the file")]
    mime_type: OptionalString = None
    file_name: OptionalString = None


class FileReference(BaseModel):
    """A file returned BY REFERENCE, in the same snake_case shape ChatGPT uses for file inputs."""

    model_config = ConfigDict(extra="forbid")

    download_url: str = Field(description="Short-lived URL of the file's bytes")
    file_id: str = Field(description="This server's id of the file")
    mime_type: str
    file_name: str


class FileInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="This server's file id; pass it to delete_file")
    name: str
    kind: str = Field(description="What the content is, from its bytes: text, csv, json, jsonl, image, pdf, binary")
    mime_type: str = Field(description="Detected from the content, not the name or the claimed type")
    claimed_mime_type: str | None = Field(default=None, description="The type ChatGPT claimed, if any")
    size: int = Field(description="Bytes")
    sha256: str
    saved: bool = Field(description="True when the file is in the user's library (signed in)")
    created_at: str = Field(description="ISO 8601, UTC")
    expires_at: str | None = Field(default=None, description="When an anonymous upload is deleted (ISO 8601, UTC)")


class FileAnalysis(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: FileInfo
    summary: str = Field(description="What the file contains, in a few sentences")
    warnings: list[str] = Field(description="Problems met while reading the file; the analysis is partial if any")
    report: FileReference = Field(description="The full analysis as a JSON file, by reference")


class TypeConflict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str
    types: dict[str, str] = Field(description="Inferred type per file name")


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str
    shared_columns: list[str] = Field(default_factory=list, description="Columns every CSV file has")
    only_in: dict[str, list[str]] = Field(default_factory=dict, description="Columns only some files have, by file")
    type_conflicts: list[TypeConflict] = Field(default_factory=list)
    rows: dict[str, int] = Field(default_factory=dict, description="Data rows per CSV file")


class FilesComparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[FileAnalysis]
    comparison: Comparison


class LibraryEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: FileInfo
    summary: str
    download: FileReference = Field(description="The original file, by reference")


class FileLibrary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[LibraryEntry] = Field(description="The user's files, newest first")
    total: int = Field(description="How many files the library holds")


class FileDeleted(BaseModel):
    model_config = ConfigDict(extra="forbid")

    deleted: bool = Field(description="False when no such file was in the library")
    file_id: str


class ChosenFile(BaseModel):
    """A file the person chose on their computer, as a file entrypoint hands it over
    (``OpenAIFileEntrypointFile`` of openai-mcp-extensions, bounded): ``resourceUri`` is the
    host's, which answers ``resources/read`` on it; this server cannot read it."""

    # What else a host may add is ignored, as the library's model does.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    name: str = Field(min_length=1, max_length=255, pattern=r"\S", description="The file's name")
    resource_uri: str = Field(alias="resourceUri", min_length=1, max_length=2048, pattern=r"\S",
                              description="The host's URI of the file (opaque)")


class FileOpening(BaseModel):
    """What ``open_file`` hands the files widget: the file to read through the host."""

    model_config = ConfigDict(extra="forbid")

    opening: ChosenFile
