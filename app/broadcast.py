"""Messages every worker and replica hears: Redis pub/sub when APP_REDIS_URL is set, this process alone otherwise.

What it is for: telling the caches of other processes that something they hold changed (a grant revoked). It
is not a queue: a process that is not subscribed when a message is published never gets it (Redis keeps
nothing), so a cache that listens keeps a time-to-live as well, and that TTL is its bound when a message is
lost. A subscriber that was cut off hears ``None`` once it is subscribed again: "you may have missed some".

A handler is a plain function, run on the event loop of the process it was subscribed in: the publisher's
own process calls it before ``publish`` returns (so the worker that made a change never serves the old value,
whatever Redis does), every other one when the message arrives.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import structlog

log = structlog.get_logger(__name__)
Handler = Callable[[str | None], None]
# A Redis that does not take a publish within this many seconds is treated as down for that message.
PUBLISH_TIMEOUT = 0.5
RETRY_S = (0.5, 1, 2, 5)  # between attempts to subscribe again, then every 5 s


class Broadcast:
    """This process only: a publish reaches its own handlers (the other workers rely on their TTLs)."""

    shared = False

    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = {}
        self.delivered = 0  # messages handed to this process's handlers from elsewhere (readiness, tests)

    def subscribe(self, channel: str, handler: Handler) -> None:
        self._handlers.setdefault(channel, []).append(handler)

    async def publish(self, channel: str, message: str) -> bool:
        """Deliver ``message`` here, and to the other processes if it can: whether it went beyond this one."""
        self._deliver(channel, message)
        return False

    def _deliver(self, channel: str, message: str | None) -> None:
        for handler in self._handlers.get(channel, ()):
            try:
                handler(message)
            except Exception:  # one handler's bug does not keep the message from the others
                log.exception("broadcast.handler_failed", channel=channel)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Subscribed (to every channel a handler was given for before) for as long as it is entered."""
        yield

    async def aclose(self) -> None:
        pass


class RedisBroadcast(Broadcast):
    """Every process subscribed to the same Redis and prefix hears every message."""

    shared = True

    def __init__(self, url: str, prefix: str) -> None:
        super().__init__()
        self.url = url
        self.prefix = prefix
        self._client: Any = None
        self.subscribed = anyio.Event()  # set while the subscription is up (start-up waits a little for it)

    def _name(self, channel: str) -> str:
        return f"{self.prefix}:broadcast:{channel}"

    def _redis(self) -> Any:
        if self._client is None:
            from redis.asyncio import Redis  # only deployments with Redis import it
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            # No retries of redis-py's own: they would reconnect a cut subscription behind the listener's back
            # (its messages of meanwhile lost, nothing forgotten), and a publish has its own deadline.
            self._client = Redis.from_url(self.url, socket_connect_timeout=PUBLISH_TIMEOUT,
                                          socket_timeout=PUBLISH_TIMEOUT, health_check_interval=10,
                                          retry=Retry(NoBackoff(), 0))
        return self._client

    async def publish(self, channel: str, message: str) -> bool:
        self._deliver(channel, message)  # here first: the worker that made the change, whatever Redis does
        from redis.exceptions import RedisError

        try:
            with anyio.fail_after(PUBLISH_TIMEOUT):
                await self._redis().publish(self._name(channel), message.encode())
        except (RedisError, OSError, TimeoutError) as exc:
            log.warning("broadcast.publish_failed", channel=channel, error=type(exc).__name__,
                        bound="the other processes' cache TTL")
            return False
        return True

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._listen)
            with anyio.move_on_after(2 * PUBLISH_TIMEOUT):  # serve without it rather than not start
                await self.subscribed.wait()
            try:
                yield
            finally:
                tasks.cancel_scope.cancel()
        await self.aclose()

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(PUBLISH_TIMEOUT):
                await client.aclose()

    async def _listen(self) -> None:
        from redis.exceptions import RedisError

        channels = {self._name(c): c for c in self._handlers}
        if not channels:
            return
        attempt, cut_off = 0, False
        while True:
            pubsub = self._redis().pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*channels)
                self.subscribed.set()
                if cut_off:
                    log.info("broadcast.subscribed_again")
                    for channel in channels.values():
                        self._deliver(channel, None)  # what was published meanwhile is lost
                attempt, cut_off = 0, False
                while True:
                    message = await pubsub.get_message(timeout=5.0)
                    if message is None or message.get("type") != "message":
                        continue
                    channel = channels.get(_text(message.get("channel")))
                    if channel is not None:
                        self.delivered += 1
                        self._deliver(channel, _text(message.get("data")))
            except (RedisError, OSError, TimeoutError) as exc:
                if not cut_off:
                    log.warning("broadcast.unsubscribed", error=type(exc).__name__,
                                bound="until subscribed again, other processes' changes reach this one within "
                                      "its caches' TTL")
                self.subscribed = anyio.Event()
                cut_off = True
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(PUBLISH_TIMEOUT):
                    with contextlib.suppress(Exception):
                        await pubsub.aclose()
            await anyio.sleep(RETRY_S[min(attempt, len(RETRY_S) - 1)])
            attempt += 1


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def open_broadcast(redis_url: str | None, prefix: str) -> Broadcast:
    return RedisBroadcast(redis_url, prefix) if redis_url else Broadcast()
