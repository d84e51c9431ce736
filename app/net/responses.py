"""What an outbound fetch returns, and the reading of its body under the size cap and the total deadline."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass

from app.net.refusals import TOTAL_TIMEOUT, refused, say
from app.net.transport import transport_errors


@dataclass(frozen=True)
class Fetched:
    url: str  # final URL after redirects
    status: int
    headers: dict[str, str]  # lower-cased names (last value wins)
    body: bytes


class Body:
    """Collects a response body under the size cap and the total deadline."""

    def __init__(self, host: str, cap: int, deadline: float, headers: dict[str, str]) -> None:
        self.host, self.cap, self.deadline = host, cap, deadline
        self.chunks: list[bytes] = []
        self.size = 0
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise refused(host, say("response declared larger than {cap} bytes", cap=cap), "size")

    def count(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.cap:
            raise refused(self.host, say("response larger than {cap} bytes", cap=self.cap), "size")
        if time.monotonic() > self.deadline:
            raise refused(self.host, say(TOTAL_TIMEOUT), "timeout")

    def add(self, chunk: bytes) -> None:
        self.count(chunk)
        self.chunks.append(chunk)


def lower_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


@dataclass
class Streamed:
    """A response whose body is read by iterating ``chunks()``: at most the cap, before the deadline."""

    url: str  # final URL after redirects
    status: int
    headers: dict[str, str]  # lower-cased names (last value wins)
    _body: Body
    _raw: AsyncIterator[bytes]

    # A generator, not just an iterator: readers close it with ``aclosing`` when they stop early.
    async def chunks(self) -> AsyncGenerator[bytes, None]:
        with transport_errors(self._body.host):
            async for chunk in self._raw:
                self._body.count(chunk)
                yield chunk
