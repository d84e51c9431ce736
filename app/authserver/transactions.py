"""The bridge to authlib: the request it reads, and one ``OAuthServer`` with one unit of work per
call (whose answers are ``OAuthReply``, ``protocol.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from joserfc.jwk import KeySet
from starlette.requests import Request

from app.authserver.forms import no_nul
from app.authserver.protocol import FormRequest, ServerConfig
from app.authserver.server import OAuthServer
from app.db import Database, UnitOfWork

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True, eq=False)
class Transactions:
    """Runs authlib's synchronous work in a worker thread, inside one read or write unit of work."""

    config: ServerConfig
    db: Database

    def form_request(self, request: Request, form: list[tuple[str, str]],
                     query: list[tuple[str, str]] | None = None,
                     method: str | None = None) -> FormRequest:
        """The request as authlib reads it: ``form`` the body already read, ``query`` the request's
        own unless given (the authorization request a page carried along)."""
        query = query if query is not None else no_nul(list(request.query_params.multi_items()))
        return FormRequest(method or request.method, f"{self.config.issuer}{request.url.path}",
                           request.headers, query, form)

    async def run(self, fn: Callable[[OAuthServer], T], *, write: bool = True,
                  client_keys: KeySet | None = None) -> T:
        def work(uow: UnitOfWork) -> T:
            return fn(OAuthServer(self.config, uow, client_keys=client_keys))

        return await (self.db.write(work) if write else self.db.read(work))
