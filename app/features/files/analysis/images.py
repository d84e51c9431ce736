"""Images, with Pillow: the header always, the pixels only within a pixel budget.

``Image.open`` applies Pillow's process-wide ``MAX_IMAGE_PIXELS`` (raising past twice it, warning past it). The
format's plugin is called directly instead, so the declared size can be read and reported whatever it is, and
this module's own limit decides, before anything is decoded, without touching the global.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import IO

from PIL import Image, ImageFile

from app.features.files.analysis.model import Notes, Result
from app.features.files.analysis.sniffing import Sniffed

_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/gif": "GIF", "image/webp": "WEBP",
            "image/bmp": "BMP", "image/tiff": "TIFF"}
_ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA", "I;16A"})
# Pillow's WebP plugin builds libwebp's decoder, and its canvas, when it opens the file: with its
# own buffers a 7,000 x 7,000 WebP took 748 MiB, four bytes per pixel four times over.
WEBP_BYTES_PER_PIXEL = 16
PREVIEW = 24  # the preview's longest side, in pixels: 24 x 24 x 3 bytes, 2.3 KB in base64


def _open_header(fp: IO[bytes], fmt: str) -> ImageFile.ImageFile:
    Image.init()
    factory, accept = Image.OPEN[fmt]
    fp.seek(0)
    prefix = fp.read(16)
    if accept and not accept(prefix):
        raise SyntaxError(f"not a {fmt} file")
    fp.seek(0)
    return factory(fp, "")


def analyze_image(path: Path, sniffed: Sniffed, notes: Notes, *, max_pixels: int,
                  memory_bytes: int | None = None) -> Result:
    """``memory_bytes``: what the analysis may allocate (its process's cap), or None: no bound
    known. Past it, pixels are not decoded; a WebP is not even opened (see above)."""
    fmt = _FORMATS.get(sniffed.mime_type, "")
    details: dict = {"format": fmt, "decoded": False}
    summary = f"{fmt or 'Image'} image"
    with open(path, "rb") as fp:
        if fmt == "WEBP" and (size := webp_size(fp.read(30))) is not None:
            width, height = size
            if width * height > max_pixels or (
                memory_bytes is not None and width * height * WEBP_BYTES_PER_PIXEL > memory_bytes
            ):
                details.update(width=width, height=height)
                notes.add(f"image declares {width:,}×{height:,} pixels, more than can be decoded "
                          "here: not decoded")
                return Result(details, f"WEBP image, {width:,}×{height:,} pixels; too large to "
                                       "decode.")
        try:
            im = _open_header(fp, fmt)
        except Exception as exc:  # any plugin failure on a bad header: report, do not decode
            notes.add(f"the image header could not be read: {type(exc).__name__}: {exc}")
            return Result(details, f"{summary}; its header could not be read.")
        try:
            width, height = im.size
            details.update(format=im.format or fmt, width=width, height=height, mode=im.mode,
                           has_alpha=im.mode in _ALPHA_MODES or "transparency" in im.info)
            summary = f"{details['format']} image, {width:,}×{height:,} pixels, mode {im.mode}"
            if dpi := _dpi(im.info.get("dpi")):
                details["dpi"] = dpi
            if width * height > max_pixels:
                notes.add(f"image declares {width:,}×{height:,} pixels, more than the limit of {max_pixels:,}: "
                          "not decoded")
                return Result(details, summary + "; too large to decode.")
            details["frames"] = frames = _frames(im)
            if frames > 1:
                summary += f", {frames:,} frames"
            try:
                details["preview"] = _decode(im, fp, fmt)
                details["decoded"] = True
            except MemoryError:  # past the analysis's memory cap (slots.py): the header stands
                notes.add("decoding its pixels needs more memory than an analysis may use: "
                          "not decoded")
                summary += "; too large to decode"
            except Exception:  # truncated data surfaces as OSError, SyntaxError, ValueError, zlib errors...
                notes.add("image data is truncated or corrupt")
                summary += "; its data is truncated or corrupt"
        except Exception as exc:
            notes.add(f"the image could not be read: {type(exc).__name__}: {exc}")
        finally:
            im.close()
    return Result(details, summary + ".")


def webp_size(head: bytes) -> tuple[int, int] | None:
    """The canvas of a WebP file from its first 30 bytes (RFC 9649: the first chunk's header), or
    None when they do not hold it."""
    chunk = head[12:16]
    if chunk == b"VP8 " and len(head) >= 30 and head[23:26] == b"\x9d\x01\x2a":  # lossy
        return (int.from_bytes(head[26:28], "little") & 0x3FFF,
                int.from_bytes(head[28:30], "little") & 0x3FFF)
    if chunk == b"VP8L" and len(head) >= 25 and head[20] == 0x2F:  # lossless: 14 bits each, - 1
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(head) >= 30:  # extended: 24 bits each, - 1
        return (int.from_bytes(head[24:27], "little") + 1,
                int.from_bytes(head[27:30], "little") + 1)
    return None


def _frames(im: ImageFile.ImageFile) -> int:
    try:
        return int(getattr(im, "n_frames", 1))
    except Exception:  # counting frames walks the file; a broken one may stop it
        return 1


def _decode(im: ImageFile.ImageFile, fp: IO[bytes], fmt: str) -> dict:
    """Decode the pixels (the first frame), raising on truncated or corrupt data; their preview."""
    if im.format == "PNG":
        # Chunk CRCs are only checked by verify(), which leaves the image unusable: decode from a fresh header.
        im.verify()
        with _open_header(fp, fmt) as again:
            again.load()
            return preview(again)
    if im.format == "JPEG":
        # Decode at 1/8 scale: every byte is still read, for a 64th of the memory.
        im.draft(im.mode, (max(1, im.size[0] // 8), max(1, im.size[1] // 8)))
    im.load()
    return preview(im)


def preview(im: Image.Image) -> dict:
    """The picture at most ``PREVIEW`` pixels a side, its RGB bytes in base64 (transparent parts
    on white): a few KB the widget paints on a canvas, which no CSP can refuse (a ``data:`` image
    may be)."""
    scale = PREVIEW / max(im.size)
    size = (max(1, round(im.size[0] * min(scale, 1))), max(1, round(im.size[1] * min(scale, 1))))
    small = im.resize(size, Image.Resampling.BILINEAR, reducing_gap=2.0)  # never a full copy
    rgba = small.convert("RGBA")
    flat = Image.new("RGB", rgba.size, (255, 255, 255))
    flat.paste(rgba, mask=rgba.getchannel("A"))
    return {"width": flat.width, "height": flat.height,
            "rgb": base64.b64encode(flat.tobytes()).decode("ascii")}


def _dpi(value: object) -> list[float] | None:
    if not isinstance(value, tuple) or len(value) != 2:
        return None
    try:
        return [round(float(value[0]), 2), round(float(value[1]), 2)]
    except (TypeError, ValueError):
        return None
