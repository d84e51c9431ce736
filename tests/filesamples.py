"""Sample files of every kind the files feature analyses, generated at test time (no binary fixtures)."""

from __future__ import annotations

import io
import json
import os
import re
import zlib


def csv_bytes(rows: int = 4) -> bytes:
    lines = ["id,name,price,in_stock,added"]
    lines += [f"{i},item {i},{i * 1.5:.2f},{'true' if i % 2 else 'false'},2026-01-{i % 28 + 1:02d}"
              for i in range(1, rows + 1)]
    return ("\n".join(lines) + "\n").encode()


def jsonl_bytes(records: int = 3) -> bytes:
    return b"".join(json.dumps({"id": i, "name": f"n{i}", "tags": ["a"] * i}).encode() + b"\n"
                    for i in range(records))


def png_bytes(width: int = 64, height: int = 48, mode: str = "RGBA") -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new(mode, (width, height), color=(10, 20, 30, 255) if mode == "RGBA" else 0).save(out, format="PNG")
    return out.getvalue()


def blob_bytes(size: int = 4096) -> bytes:
    return b"\x00\x01BLOB" + os.urandom(size - 6)


def pdf_bytes(pages: list[str], *, title: str = "Quarterly report", author: str = "Alice") -> bytes:
    """A small valid PDF: one Helvetica text line per page, an /Info dictionary and a correct xref table."""
    objects: list[bytes] = []
    page_ids = [3 + 2 * i for i in range(len(pages))]
    font_id = 3 + 2 * len(pages)
    info_id = font_id + 1
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids).encode()
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(len(pages)).encode() + b" >>")
    for page_id, text in zip(page_ids, pages, strict=True):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
        stream = b"BT /F1 12 Tf 72 720 Td (" + escaped + b") Tj ET"
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 "
                       + str(font_id).encode() + b" 0 R >> >> /Contents " + str(page_id + 1).encode() + b" 0 R >>")
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(f"<< /Title ({title}) /Author ({author}) >>".encode("latin-1"))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R /Info {info_id} 0 R >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def flate_pdf(streams: list[bytes], contents: list[str]) -> bytes:
    """A PDF whose pages draw Flate-compressed content streams: each page's /Contents is written
    as given, S0, S1... standing for references to the streams (e.g. "S0" or "[S0 S1]")."""
    first_stream = 4 + len(contents)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: f"<< /Type /Pages /Kids [{' '.join(f'{4 + i} 0 R' for i in range(len(contents)))}] "
           f"/Count {len(contents)} >>".encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for i, spec in enumerate(contents):
        refs = re.sub(r"S(\d+)", lambda m: f"{first_stream + int(m.group(1))} 0 R", spec)
        objects[4 + i] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
                          b"<< /Font << /F1 3 0 R >> >> /Contents " + refs.encode() + b" >>")
    for i, stream in enumerate(streams):
        data = zlib.compress(stream, 9)
        objects[first_stream + i] = (b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data)
                                     + data + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref, size = len(out), max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[n] for n in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def slow_pdf(content_bytes: int = 500 * 1024) -> bytes:
    """One page of the costliest text operators pypdf tokenises (a one-letter string shown on every
    line), ``content_bytes`` of them: within the analysis' content cap, about 2 s of processor time
    here, from a file of a few KB."""
    line = b"(a)'\n"
    content = b"BT /F1 12 Tf 72 712 Td 14 TL\n" + line * (content_bytes // len(line)) + b"ET"
    return flate_pdf([content], ["S0"])
