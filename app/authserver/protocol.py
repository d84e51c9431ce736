"""What the authorization server's protocol modules share: its configuration, the request authlib
reads (over a body Starlette already read), and RFC 8707's resource indicators."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    OAuth2Request,
)
from joserfc.jwk import KeySet
from starlette.responses import JSONResponse, Response

from app.auth.scopes import ScopeCatalog
from app.authserver.forms import CORS, NO_STORE
from app.authserver.keys import KeyRing
from app.authserver.models import Account, OAuthGrant
from app.db import UnitOfWork

if TYPE_CHECKING:
    from app.authserver.clients import Client

SECRET_AUTH = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
# Asymmetric only: a client's keys are public (its JWKS), so an HMAC "key" from them would let
# anyone sign.
ASSERTION_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                        "ES512", "EdDSA"]
# seconds in which the same client re-posting its code is a retry, not a theft
CODE_RETRY_WINDOW = 10



class InvalidTargetError(OAuth2Error):
    error = "invalid_target"  # RFC 8707 §2


def normalise_resource(value: str) -> str | None:
    """RFC 8707 resource indicator, compared after case and default-port normalisation; None if
    malformed."""
    try:
        parts = urlsplit(value)
        port = parts.port  # raises on a port that is not a number in range
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    netloc = (host if port is None or (parts.scheme, port) in (("http", 80), ("https", 443))
              else f"{host}:{port}")
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/") or "", parts.query, ""))


@dataclass(frozen=True)
class ServerConfig:
    issuer: str
    resources: tuple[str, ...]  # normalised, allowed; the first one is the default
    catalog: ScopeCatalog
    keys: KeyRing
    access_ttl: int
    refresh_ttl: int
    refresh_grace: int
    code_ttl: int
    # a DCR client no one linked through is deleted after this (clients.py)
    dcr_unused_ttl: int = 24 * 3600

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"


@dataclass(frozen=True)
class OAuthReply:
    """What authlib answered (``OAuthServer.handle_response``): a redirect, or a JSON document."""

    status: int
    body: Any
    headers: Mapping[str, str]

    def response(self) -> Response:
        # authlib's own headers (Cache-Control, Pragma, Content-Type) spelt its way: each header
        # once, ours winning; a strict client refuses a token response that repeats one.
        theirs = {name.lower(): value for name, value in self.headers.items()
                  if name.lower() != "content-type"}
        if self.status == 302:
            return Response(status_code=302, headers={**theirs, **NO_STORE})
        return JSONResponse(self.body, status_code=self.status,
                            headers={**theirs, **NO_STORE, **CORS})


def reply(answer: object) -> OAuthReply:
    """authlib's answer to a request, which ``OAuthServer.handle_response`` made an ``OAuthReply``
    (authlib's own annotations say less)."""
    if not isinstance(answer, OAuthReply):
        raise TypeError(f"authlib answered with a {type(answer).__name__}, "
                        "not through handle_response")
    return answer


class FormRequest(OAuth2Request):
    """An authlib request over a body and query Starlette already read (no I/O here)."""

    # authlib types these for any server; this server's are a client from OAuthServer.query_client
    # and an account from the sign-in (and the payload made below, never missing).
    client: Client | None  # pyright: ignore[reportIncompatibleVariableOverride] (see above)
    user: Account | None

    def __init__(self, method: str, uri: str, headers: Any, query: list[tuple[str, str]],
                 form: list[tuple[str, str]]) -> None:
        super().__init__(method, uri, headers=headers)
        self._args: dict[str, str | None] = dict(query)
        self._form = dict(form)
        pairs = (form if method == "POST" else []) + (query if method == "GET" else [])
        datalist: dict[str, list[str]] = {}
        for key, value in pairs:
            datalist.setdefault(key, []).append(value)
        data = {k: v[0] for k, v in datalist.items()}
        # Typed as this server makes it (see the comment on client):
        self.payload: _Payload = _Payload(  # pyright: ignore[reportIncompatibleVariableOverride]
            data, datalist)
        self.resource: str | None = None
        self.grant_id: str | None = None

    @property
    def args(self) -> dict[str, str | None]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _Payload:
    def __init__(self, data: dict[str, str], datalist: dict[str, list[str]]) -> None:
        self.data = data
        self.datalist = datalist

    client_id = property(lambda self: self.data.get("client_id"))
    response_type = property(lambda self: self.data.get("response_type"))
    grant_type = property(lambda self: self.data.get("grant_type"))
    redirect_uri = property(lambda self: self.data.get("redirect_uri"))
    scope = property(lambda self: self.data.get("scope"))
    state = property(lambda self: self.data.get("state"))


class GrantServer(Protocol):
    """What the grants and endpoints (grants.py) ask of the server they are registered on
    (``OAuthServer``): this request's unit of work, the configuration, and the server's rules."""

    config: ServerConfig
    uow: UnitOfWork
    client_keys: KeySet | None
    issued_refresh_hash: str | None

    def bound_resource(self, requested: str | None) -> str: ...

    def check_resource(self, requested: str | None, bound: str) -> str: ...

    def enabled_account(self, account_id: str) -> Account | None: ...

    def issue(self, grant: OAuthGrant, scope: str,
              include_refresh_token: bool) -> dict[str, Any]: ...

    def access_claims(self, token: str) -> dict[str, Any] | None: ...

    def first_use_of_jti(self, client_id: str, jti: str, expires_at: int) -> bool: ...
