"""PDF, with pypdf (lenient mode): page count, encryption, metadata, and the text of the first pages.

Each step is guarded on its own, so what could be read before a failure is kept.
"""

from __future__ import annotations

import re
from pathlib import Path

from pypdf import PageObject, PdfReader, apply_configuration
from pypdf.generic import ArrayObject, IndirectObject

from app.features.files.analysis.decoding import open_binary
from app.features.files.analysis.model import MAX_INDEX_CHARS, Notes, Result, clip

PAGE_TEXT_CHARS = 2000
# The decoded page content that text extraction may tokenise, per file: a small file can inflate to
# megabytes of content, and tokenising is the slow part. Measured with pypdf 7.1.1 on this machine
# (2 cores): extract_text costs 1.4-1.8 s of CPU per MiB of ordinary text-showing operators and up
# to ~4 s per MiB for the costliest ones (a one-letter string and ' on every line), so 512 KiB keeps
# the worst file near 2 s, while ordinary pages hold a few KiB to a few tens of KiB of content.
MAX_CONTENT_BYTES = 512 << 10
# Form XObjects a page's text extraction may enter (pypdf: 5,000): each entry tokenises the form
# again, so a 1.2 KB file drawing one 100 KiB form 50 times cost 7.8 s. The analysis' processor-time
# cap (app/features/files/slots.py) bounds what is left: a single form of several MiB.
XFORM_INVOCATIONS = 16
# A content stream is decoded before its size is compared with MAX_CONTENT_BYTES: a 13 KB file can
# inflate to pypdf's own bound (75 MB). This bounds what the analysis process holds for one.
MAX_DECODED_STREAM = 8 << 20
META_CHARS = 200
_READ = 1 << 20
# Page objects and a title, looked for in the raw bytes of a PDF pypdf cannot open (a truncated download).
_PAGE_OBJECT = re.compile(rb"/Type\s{0,8}/Page(?![A-Za-z])")
_RAW_TITLE = re.compile(rb"/Title\s{0,8}\(([^()\\]{1,200})\)")
_METADATA = {"/Title": "title", "/Author": "author", "/Subject": "subject", "/Creator": "creator",
             "/Producer": "producer", "/CreationDate": "creation_date"}


def _why(exc: BaseException) -> str:
    return clip(f"{type(exc).__name__}: {exc}", 120)


def analyze_pdf(path: Path, notes: Notes, *, text_pages: int) -> Result:
    details: dict = {"pages": None, "encrypted": False, "metadata": {}, "first_pages_text": []}
    with open_binary(path) as fh:
        try:
            # A file object, not the path: given a path, pypdf reads the whole file into memory.
            reader = PdfReader(fh, strict=False)
        except Exception as exc:  # pypdf raises anything on a damaged file
            notes.add(f"the PDF could not be read: {_why(exc)}")
            return _damaged(path, details)
        texts: list[str] = []
        # pypdf reads nothing more of a file it could not decrypt, not even the page count.
        if _decrypt(reader, details, notes):
            details["metadata"] = _metadata(reader, notes)
            try:
                details["pages"] = len(reader.pages)
            except Exception as exc:
                notes.add(f"the page tree could not be read: {_why(exc)}")
            with apply_configuration(xform_maximum_invocations_per_extraction=XFORM_INVOCATIONS,
                                     zlib_maximum_output_length=MAX_DECODED_STREAM):
                texts = _page_texts(reader, details["pages"] or 0, text_pages, notes)
    details["first_pages_text"] = [clip(t, PAGE_TEXT_CHARS) for t in texts]
    pages = details["pages"]
    summary = "PDF document" + (f", {pages:,} page{'s' if pages != 1 else ''}" if pages is not None else "")
    if title := details["metadata"].get("title"):
        summary += f", titled “{clip(title, 120)}”"
    if details["encrypted"]:
        summary += ", encrypted"
    summary += "."
    if texts and not any(t.strip() for t in texts):
        summary += " Its first pages have no extractable text (scanned images?)."
    return Result(details, summary, "\n\n".join(texts)[:MAX_INDEX_CHARS])


def _damaged(path: Path, details: dict) -> Result:
    """What a scan of the raw bytes still tells about a PDF that cannot be opened."""
    pages, title, tail = 0, None, b""
    with open(path, "rb") as f:
        while block := f.read(_READ):
            window = tail + block
            # A match ending inside the carried tail was counted with the previous block.
            pages += sum(1 for m in _PAGE_OBJECT.finditer(window) if m.end() > len(tail))
            if title is None and (m := _RAW_TITLE.search(window)):
                title = m.group(1).decode("latin-1").strip()
            tail = window[-256:]
    details["encrypted"] = None  # unknown: the trailer was not read
    details["page_objects_found"] = pages
    summary = f"A damaged PDF document that could not be opened; {pages:,} page object{'s' if pages != 1 else ''} found"
    if title:
        details["metadata"] = {"title": clip(title, META_CHARS)}
        summary += f", titled “{clip(title, 120)}”"
    return Result(details, summary + ".")


def _decrypt(reader: PdfReader, details: dict, notes: Notes) -> bool:
    try:
        encrypted = bool(reader.is_encrypted)
    except Exception as exc:
        notes.add(f"the encryption dictionary could not be read: {_why(exc)}")
        return False
    details["encrypted"] = encrypted
    if not encrypted:
        return True
    try:
        if reader.decrypt(""):
            return True
    except Exception as exc:
        notes.add(f"the PDF could not be decrypted: {_why(exc)}")
        return False
    notes.add("the PDF is encrypted with a password: its text and metadata were not read")
    return False


def _metadata(reader: PdfReader, notes: Notes) -> dict[str, str]:
    try:
        info = reader.metadata
        if not info:
            return {}
        out = {}
        for key, name in _METADATA.items():
            value = info.get(key)
            if value is not None and str(value).strip():
                out[name] = clip(str(value).strip(), META_CHARS)
        return out
    except Exception as exc:
        notes.add(f"the document information could not be read: {_why(exc)}")
        return {}


def _page_texts(reader: PdfReader, pages: int, limit: int, notes: Notes) -> list[str]:
    texts: list[str] = []
    budget = MAX_INDEX_CHARS
    count = min(pages, max(0, limit))
    # The text (or failure) of the content streams a page draws: pages drawing the same streams get
    # the same result, so content shared by many pages is tokenised once. (Pages sharing a stream
    # under different fonts would differ, a case too rare to pay a second tokenisation for.)
    done: dict[tuple[tuple[int, int], ...], tuple[str, str | None]] = {}
    read = 0  # decoded content bytes given to extract_text so far
    for number in range(count):
        key = None
        try:
            page = reader.pages[number]
            key = _contents_key(page)
            if key is not None and key in done:
                text, error = done[key]
            else:
                size = _content_size(page)
                if read + size > MAX_CONTENT_BYTES:
                    _note_skipped(number + 1, count, notes)
                    return texts + [""] * (count - number)
                read += size
                text, error = page.extract_text() or "", None
        except Exception as exc:
            text, error = "", _why(exc)
        if key is not None:
            done.setdefault(key, (text[:MAX_INDEX_CHARS], error))
        if error is not None:
            notes.add(f"the text of page {number + 1} could not be extracted: {error}")
        texts.append(text[:budget])
        budget = max(0, budget - len(text))
    return texts


def _contents_key(page: PageObject) -> tuple[tuple[int, int], ...] | None:
    """The indirect references of the page's content streams; None for direct (in-memory) ones."""
    try:
        contents = page.raw_get("/Contents")
        if isinstance(contents, IndirectObject):
            resolved = contents.get_object()
            if not isinstance(resolved, ArrayObject):
                return ((contents.idnum, contents.generation),)
            contents = resolved
        if isinstance(contents, ArrayObject):
            if all(isinstance(c, IndirectObject) for c in contents):
                return tuple((c.idnum, c.generation) for c in contents)
    except Exception:  # a damaged /Contents: no key, and extraction reports the damage
        pass
    return None


def _content_size(page: PageObject) -> int:
    """The decoded size of the page's content: decoding is cheap, tokenising waits until asked."""
    contents = page.get_contents()
    return len(contents.get_data()) if contents is not None else 0


def _note_skipped(first: int, last: int, notes: Notes) -> None:
    pages = f"page {first}" if first == last else f"pages {first}-{last}"
    whose = "its" if first == last else "their"
    notes.add(f"the text of {pages} was not extracted: {whose} content is beyond the "
              f"{_size(MAX_CONTENT_BYTES)} this analysis reads")


def _size(count: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.3g} {unit}"
    return f"{count} bytes"
