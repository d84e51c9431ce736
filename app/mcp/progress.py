"""Progress of a long tool call, for a caller that asked for it (a ``progressToken``).

The SDK sends ``notifications/progress`` (``Context.report_progress``); the request's admission
routes such a call to a streamed answer, the only one they have a wire in (``app.mcp.admission``).
This wraps it for work that reports often (every chunk of a download): at most one notification
every ``interval`` seconds, each with more progress than the last (the spec's rule), and nothing
at all, not even the bookkeeping, for a call that did not ask.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from app.mcp.admission import current

Send = Callable[[float, float | None, str | None], Awaitable[None]]
INTERVAL_S = 0.25


class Progress:
    def __init__(
        self,
        send: Send | None,
        *,
        interval: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send = send
        self._interval = interval
        self._clock = clock
        self._last_sent = -1.0
        self._sent_at = float("-inf")

    @classmethod
    def of(cls, ctx: Any) -> Progress:
        """The progress of the call ``ctx`` (the SDK's ``Context``) serves: silent unless it
        carries a
        progressToken and, over HTTP, is answered as a stream (a JSON answer has no room for it)."""
        request = getattr(ctx, "request_context", None)
        meta = getattr(request, "meta", None)
        if ctx is None or not (isinstance(meta, dict) and meta.get("progress_token") is not None):
            return cls(None)
        admitted = current()
        if admitted is not None and not admitted.streamed:
            return cls(None)
        return cls(ctx.report_progress)

    @property
    def wanted(self) -> bool:
        return self._send is not None

    async def report(
        self, done: float, total: float | None, message: str, *, now: bool = False
    ) -> None:
        """``done`` of ``total`` (None: not known yet); sent if ``now`` or the interval has passed
        since the
        last one, and if ``done`` is more than was last sent."""
        if self._send is None or done <= self._last_sent:
            return
        at = self._clock()
        if not now and at - self._sent_at < self._interval:
            return
        self._last_sent, self._sent_at = done, at
        await self._send(done, total, message)
