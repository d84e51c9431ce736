"""Who is calling: the principal of the current request, kept in a contextvar.

Anonymous is a valid principal (tools with a ``noauth`` scheme serve it). The
resource-server check (the OAuth issue) installs a resolver that turns a
verified bearer token into an authenticated principal; transport code never
needs to know how.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass(frozen=True, slots=True)
class Principal:
    subject: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)
    client_id: str | None = None

    @property
    def is_anonymous(self) -> bool:
        return self.subject is None


ANONYMOUS = Principal()
_current: contextvars.ContextVar[Principal] = contextvars.ContextVar("principal", default=ANONYMOUS)

# Returns the principal, or an ASGI app (e.g. a 401 response) that answers instead.
Resolver = Callable[[Scope], Awaitable["Principal | ASGIApp"]]


async def anonymous_resolver(scope: Scope) -> Principal:
    return ANONYMOUS


def current_principal() -> Principal:
    return _current.get()


class PrincipalMiddleware:
    """Resolve the caller once per HTTP request and expose it via ``current_principal()``."""

    def __init__(self, app: ASGIApp, resolver: Resolver = anonymous_resolver) -> None:
        self.app = app
        self.resolver = resolver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        resolved = await self.resolver(scope)
        if not isinstance(resolved, Principal):
            await resolved(scope, receive, send)
            return
        token = _current.set(resolved)
        try:
            await self.app(scope, receive, send)
        finally:
            _current.reset(token)
