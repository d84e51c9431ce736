"""``analyze``: sniff the file, hand it to its kind's analyser, and hold the result to its limits."""

from __future__ import annotations

from pathlib import Path

import structlog

from app.features.files.analysis.binary import analyze_binary
from app.features.files.analysis.decoding import reporting
from app.features.files.analysis.images import analyze_image
from app.features.files.analysis.model import MAX_SUMMARY_CHARS, Analysis, Notes, Result, clip, fit_details
from app.features.files.analysis.pdfs import analyze_pdf
from app.features.files.analysis.plaintext import analyze_text
from app.features.files.analysis.sniffing import Sniffed, detect
from app.features.files.analysis.structured import analyze_json, analyze_jsonl
from app.features.files.analysis.tabular import analyze_csv
from app.text import storable_text

log = structlog.get_logger(__name__)


def analyze(path: Path, *, file_name: str | None = None, max_pixels: int = 50_000_000,
            pdf_text_pages: int = 5, memory_bytes: int | None = None,
            progress_path: Path | None = None) -> Analysis:
    """Describe the file at ``path`` by its content. Bad content gives a partial result with warnings; only an
    OSError reading the path, and a MemoryError past the analysis's memory cap, are raised.
    ``progress_path``: a file to write how far the analysis has read (``decoding.reporting``)."""
    path = Path(path)
    notes = Notes()
    sniffed = detect(path, file_name)
    try:
        with reporting(progress_path):
            result = _run(path, sniffed, notes, max_pixels, pdf_text_pages, memory_bytes)
    except (OSError, MemoryError):  # MemoryError: past the memory cap, the analysis stops
        raise
    except Exception as exc:  # a file no analyser foresaw must still give an answer, not fail the upload
        log.warning("files.analysis_incomplete", kind=sniffed.kind, error=type(exc).__name__, exc_info=exc)
        notes.add(f"the {sniffed.kind} analysis stopped early ({type(exc).__name__})")
        result = Result({}, f"{sniffed.mime_type} file of {sniffed.size:,} bytes; it could not be fully analysed.")
    if sniffed.size == 0:
        notes.add("file is empty")
    details = fit_details({"bytes": sniffed.size, **result.details}, notes)
    summary = clip(" ".join(storable_text(result.summary).split()), MAX_SUMMARY_CHARS)
    if sniffed.size == 0:
        summary = "Empty file (0 bytes)."
    text = storable_text(result.text) if sniffed.kind not in ("image", "binary") else ""
    return Analysis(sniffed.kind, sniffed.mime_type, summary, details, notes.as_list(), text)


def _run(path: Path, sniffed: Sniffed, notes: Notes, max_pixels: int, pdf_text_pages: int,
         memory_bytes: int | None) -> Result:
    kind = sniffed.kind
    if kind == "csv":
        return analyze_csv(path, sniffed, notes)
    if kind == "json":
        return analyze_json(path, sniffed, notes)
    if kind == "jsonl":
        return analyze_jsonl(path, sniffed, notes)
    if kind == "image":
        return analyze_image(path, sniffed, notes, max_pixels=max_pixels, memory_bytes=memory_bytes)
    if kind == "pdf":
        return analyze_pdf(path, notes, text_pages=pdf_text_pages)
    if kind == "binary":
        return analyze_binary(path, sniffed)
    return analyze_text(path, sniffed, notes)
