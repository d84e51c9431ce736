"""A streaming JSON reader: checks a document and describes its shape without holding it in memory.

The members of a container are decoded by the C decoder (``raw_decode``) one after another, in runs that stop
at the end of a window of text; each run is then counted level by level. A member too large for the window is
entered instead, and its own members are read the same way. So memory is bounded by the window, not the file,
whatever the nesting, and the Python-level work is a few steps per member (jsonshape does the counting).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from app.features.files.analysis.decoding import open_text
from app.features.files.analysis.jsonshape import JsonScan, Shape
from app.features.files.analysis.model import MAX_INDEX_CHARS

CHUNK = 64 * 1024
WINDOW = 256 * 1024
MAX_TOKEN = 1 << 20
MAX_DEPTH = 512
LONG_KEY = "(a key longer than 1 MB)"

_DECODER = json.JSONDecoder()
_WS = re.compile(r"[ \t\n\r]*")
_COMMA = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_COLON_RE = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_KEY_FIRST, _KEY, _COLON, _VALUE_FIRST, _VALUE, _SEP = range(6)


def _open_end(buf: str, eof: bool) -> int:
    """Where a decoded value must end to be surely complete: "12" read from "12.5e-3" may be followed by
    "." or "e-" (up to two characters) at the end of the buffer, with the rest of the number still unread."""
    return len(buf) + 1 if eof else len(buf) - 2


class JsonSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int, kind: str) -> None:
        super().__init__(message)
        self.message, self.line, self.column, self.kind = message, line, column, kind


def scan_json(path: Path, encoding: str) -> JsonScan:
    with open_text(path, encoding) as (stream, tally):
        scanner = _Scanner(stream.read)
        scan = scanner.run()
    scan.tally = tally
    return scan


class _Frame:
    __slots__ = ("is_object", "state", "key")

    def __init__(self, is_object: bool) -> None:
        self.is_object = is_object
        self.state = _KEY_FIRST if is_object else _VALUE_FIRST
        self.key = ""


class _Scanner:
    def __init__(self, read: Callable[[int], str]) -> None:
        self._read = read
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.base = 0  # offset in the document of buf[0]
        self.lines = 0  # newlines before buf[0]
        self.line_start = 0  # offset in the document where the line holding buf[0] starts
        self.stack: list[_Frame] = []
        self.scan = JsonScan()
        self.shape = Shape(self.scan)
        self._index: list[str] = []
        self._index_len = 0

    def run(self) -> JsonScan:
        scan = self.scan
        try:
            self._document()
            scan.ok = True
        except JsonSyntaxError as exc:
            scan.error = f"line {exc.line:,}, column {exc.column:,}: {exc.message}"
            scan.error_kind = exc.kind
        self.shape.finish()
        scan.index_text = "".join(self._index)
        return scan

    # -- the buffer ---------------------------------------------------------------------------------------------

    def _fill(self, want: int) -> None:
        """Make at least ``want`` characters available from pos, unless the document ends first."""
        while len(self.buf) - self.pos < want and not self.eof:
            if self.pos:
                newlines = self.buf.count("\n", 0, self.pos)
                if newlines:
                    self.lines += newlines
                    self.line_start = self.base + self.buf.rindex("\n", 0, self.pos) + 1
                self.base += self.pos
                self.buf = self.buf[self.pos:]
                self.pos = 0
            chunk = self._read(max(CHUNK, want - len(self.buf)))
            if not chunk:
                self.eof = True
                break
            if self._index_len < MAX_INDEX_CHARS:
                piece = chunk[: MAX_INDEX_CHARS - self._index_len]
                self._index.append(piece)
                self._index_len += len(piece)
            self.buf += chunk

    def _location(self, p: int) -> tuple[int, int]:
        line = self.lines + self.buf.count("\n", 0, p) + 1
        newline = self.buf.rfind("\n", 0, p)
        column = p - newline if newline >= 0 else self.base + p - self.line_start + 1
        return line, column

    def _fail(self, message: str, p: int | None = None, kind: str = "syntax",
              where: tuple[int, int] | None = None) -> NoReturn:
        line, column = where or self._location(self.pos if p is None else p)
        raise JsonSyntaxError(message, line, column, kind)

    def _peek(self) -> str:
        """The next non-whitespace character, or "" at the end of the document."""
        while True:
            blank = _WS.match(self.buf, self.pos)
            assert blank is not None  # the pattern can match "": never None
            self.pos = blank.end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if self.eof:
                return ""
            self._fill(1)

    # -- the grammar --------------------------------------------------------------------------------------------

    def _document(self) -> None:
        c = self._peek()
        if c not in ("{", "["):
            self._fail("expected an object or an array" if c else "the document is empty")
        self.scan.top_type = "object" if c == "{" else "array"
        self._open(c)
        while self.stack:
            self._step()
        newline = False
        while True:
            blank = _WS.match(self.buf, self.pos)
            assert blank is not None  # the pattern can match "": never None
            end = blank.end()
            newline = newline or self.buf.find("\n", self.pos, end) >= 0
            self.pos = end
            if end < len(self.buf) or self.eof:
                break
            self._fill(1)
        if self.pos < len(self.buf):
            self.scan.next_on_new_line = newline and self.buf[self.pos] in "{["
            self._fail("extra data after the top-level value", kind="extra")

    def _open(self, c: str) -> None:
        if len(self.stack) >= MAX_DEPTH:
            self._fail(f"nesting deeper than {MAX_DEPTH} levels", kind="depth")
        self.stack.append(_Frame(c == "{"))
        self.pos += 1
        self.shape.opened(dict if c == "{" else list, len(self.stack))

    def _step(self) -> None:
        frame = self.stack[-1]
        c = self._peek()
        if not c:
            self._fail(f"unexpected end of data ({len(self.stack)} unclosed object(s) or array(s))", kind="eof")
        state = frame.state
        if state == _SEP:
            if c == ",":
                self.pos += 1
                frame.state = _KEY if frame.is_object else _VALUE
            elif c == ("}" if frame.is_object else "]"):
                self.pos += 1
                self.stack.pop()
            else:
                self._fail(f"expected ',' or '{'}' if frame.is_object else ']'}'")
        elif not frame.is_object:
            if c == "]" and state == _VALUE_FIRST:
                self.pos += 1
                self.stack.pop()
            elif not self._run(frame):
                self._value(c, frame, decoded=False)
        elif state == _COLON:
            if c != ":":
                self._fail("expected ':' after a property name")
            self.pos += 1
            frame.state = _VALUE
        elif state == _VALUE:
            self._value(c, frame, decoded=True)
        elif c == "}" and state == _KEY_FIRST:
            self.pos += 1
            self.stack.pop()
        elif not self._run(frame):
            if c != '"':
                self._fail("expected a property name in double quotes")
            key = self._string()
            frame.key = LONG_KEY if key is None else key
            frame.state = _COLON

    def _value(self, c: str, frame: _Frame, decoded: bool) -> None:
        """One member value at pos; ``decoded`` is False when a run has just failed to decode it whole."""
        frame.state = _SEP
        if c == "{" or c == "[":
            value = None
            if decoded:
                self._fill(WINDOW)
                try:
                    value, self.pos = _DECODER.raw_decode(self.buf, self.pos)
                except (ValueError, RecursionError):
                    value = None
            if value is None:
                # Larger than the window, or broken: enter it, and find out member by member.
                self._member(frame, dict if c == "{" else list, None)
                self._open(c)
                return
        else:
            value = self._scalar(c)
        self.shape.walk(value, len(self.stack) + 1)
        self._member(frame, type(value), value)

    def _member(self, frame: _Frame, kind: type, value: object) -> None:
        key = frame.key if frame.is_object else None
        self.shape.member(len(self.stack), self.stack[0].is_object, key, kind, value)

    def _run(self, frame: _Frame) -> bool:
        """Decode the container's members from pos while they fit in the window; False if not even one does."""
        self._fill(WINDOW)
        buf, pos, decode, colon, comma = self.buf, self.pos, _DECODER.raw_decode, _COLON_RE.match, _COMMA.match
        is_object = frame.is_object
        limit = pos + WINDOW
        open_end = _open_end(buf, self.eof)
        keys: list[str] = []
        values: list[object] = []
        end = pos
        key = ""  # an object member's, decoded before its value: never read before it is set
        while pos < limit:
            try:
                if is_object:
                    if not buf.startswith('"', pos):
                        break
                    key, after_key = decode(buf, pos)
                    m = colon(buf, after_key)
                    if m is None:
                        break
                    pos = m.end()
                value, end_ = decode(buf, pos)
            except (ValueError, RecursionError):
                break
            if end_ >= open_end:
                break
            if is_object:
                keys.append(key)
            values.append(value)
            end = end_
            m = comma(buf, end)
            if m is None:
                break
            pos = m.end()
        if not values:
            return False
        self.pos = end
        frame.state = _SEP
        self.shape.run(len(self.stack), self.stack[0].is_object, keys if is_object else None, values)
        return True

    def _scalar(self, c: str) -> object:
        if c == '"':
            value = self._string()
            return "" if value is None else value
        want = 64
        while True:
            self._fill(want)
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                self._fail(exc.msg, exc.pos)
            except ValueError as exc:  # an integer too long for int()
                self._fail(str(exc), kind="size")
            if end < _open_end(self.buf, self.eof):
                self.pos = end
                return value
            if want > MAX_TOKEN:
                self._fail("a number longer than 1 MB", kind="size")
            want = 2 * (len(self.buf) - self.pos)

    def _string(self) -> str | None:
        """The string at pos, or None for one longer than MAX_TOKEN (skipped, not kept)."""
        while True:
            body = _STRING_BODY.match(self.buf, self.pos + 1)
            assert body is not None  # the pattern can match "": never None
            body_end = body.end()
            if body_end < len(self.buf) and self.buf[body_end] == '"':
                try:
                    value, self.pos = _DECODER.raw_decode(self.buf, self.pos)
                except json.JSONDecodeError as exc:
                    self._fail(exc.msg, exc.pos)
                return value
            if self.eof:
                self._fail("unterminated string", kind="eof")
            if len(self.buf) - self.pos > MAX_TOKEN:
                return self._skip_string(body_end)
            self._fill(len(self.buf) - self.pos + CHUNK)

    def _skip_string(self, p: int) -> None:
        where = self._location(self.pos)
        while True:
            self.pos = p
            if p < len(self.buf) and self.buf[p] == '"':
                self.pos = p + 1
                return None
            if self.eof:
                self._fail("unterminated string", kind="eof", where=where)
            self._fill(len(self.buf) - self.pos + CHUNK)  # keeps a trailing backslash, whose escape is next
            body = _STRING_BODY.match(self.buf, self.pos)
            assert body is not None  # the pattern can match "": never None
            p = body.end()
