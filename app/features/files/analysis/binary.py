"""Binary data: size, SHA-256 and a guess of the format from its magic bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

from app.features.files.analysis.model import Result
from app.features.files.analysis.sniffing import Sniffed

_READ = 1 << 20
_SIGNATURES = (
    (0, b"PK\x03\x04", "ZIP archive"),
    (0, b"PK\x05\x06", "ZIP archive (empty)"),
    (0, b"\x1f\x8b", "gzip data"),
    (0, b"BZh", "bzip2 data"),
    (0, b"\xfd7zXZ\x00", "xz data"),
    (0, b"(\xb5/\xfd", "Zstandard data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (257, b"ustar", "tar archive"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"\x7fELF", "ELF executable"),
    (0, b"MZ", "Windows executable"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"OggS", "Ogg media"),
    (0, b"ID3", "MP3 audio"),
    (0, b"fLaC", "FLAC audio"),
    (4, b"ftyp", "MP4/QuickTime media"),
    (0, b"\x1aE\xdf\xa3", "Matroska/WebM media"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "OLE compound document (old Office format)"),
    (0, b"PAR1", "Parquet data"),
)


def type_guess(head: bytes) -> str:
    for offset, magic, name in _SIGNATURES:
        if head[offset: offset + len(magic)] == magic:
            return name
    return "unknown binary data"


def analyze_binary(path: Path, sniffed: Sniffed) -> Result:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_READ):
            digest.update(block)
    guess = type_guess(sniffed.head)
    details = {"sha256": digest.hexdigest(), "type_guess": guess, "first_bytes_hex": sniffed.head[:16].hex()}
    return Result(details, f"Binary file ({guess}), {sniffed.size:,} bytes.")
