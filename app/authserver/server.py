"""The authorization server's protocol logic, on authlib's grant and endpoint classes.

One ``OAuthServer`` is built per HTTP request, inside a worker thread, around ONE unit of
work: authlib is synchronous, and a token request (code redemption, grant creation,
refresh rotation) then commits or rolls back as a whole. Network work (client documents,
client keys) is done by the caller before, on the event loop; this module never fetches.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import structlog
from authlib.common.urls import add_params_to_uri
from authlib.oauth2 import AuthorizationServer, OAuth2Error
from authlib.oauth2.rfc6749 import (
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
    OAuth2Request,
)
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant as _AuthorizationCodeGrant
from authlib.oauth2.rfc6749.grants import RefreshTokenGrant as _RefreshTokenGrant
from authlib.oauth2.rfc7009 import RevocationEndpoint as _RevocationEndpoint
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7636.challenge import compare_s256_code_challenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint as _IntrospectionEndpoint
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from sqlalchemy import delete

from app.auth.accounts import AccountRepository
from app.auth.clients import AUTH_METHODS, Client, ClientRepository, digest
from app.auth.keys import KeyRing
from app.auth.models import Account, AuthorizationCode, ClientAssertion, OAuthGrant, RefreshToken
from app.auth.scopes import ScopeCatalog
from app.auth.tokens import decode_claims, sign_access_token
from app.db import UnitOfWork
from app.db.upsert import insert_if_absent

log = structlog.get_logger(__name__)
SECRET_AUTH = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
# Asymmetric only: a client's keys are public (its JWKS), so an HMAC "key" from them would let anyone sign.
ASSERTION_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
CODE_RETRY_WINDOW = 10  # seconds in which the same client re-posting its code is a retry, not a theft


class InvalidTargetError(OAuth2Error):
    error = "invalid_target"  # RFC 8707 §2


def normalise_resource(value: str) -> str | None:
    """RFC 8707 resource indicator, compared after case and default-port normalisation; None if malformed."""
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
    netloc = host if port is None or (parts.scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
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

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/token"


class FormRequest(OAuth2Request):
    """An authlib request over a body and query Starlette already read (no I/O here)."""

    def __init__(self, method: str, uri: str, headers: Any, query: list[tuple[str, str]],
                 form: list[tuple[str, str]]) -> None:
        super().__init__(method, uri, headers=headers)
        self._args = dict(query)
        self._form = dict(form)
        pairs = (form if method == "POST" else []) + (query if method == "GET" else [])
        datalist: dict[str, list[str]] = {}
        for key, value in pairs:
            datalist.setdefault(key, []).append(value)
        self.payload = _Payload({k: v[0] for k, v in datalist.items()}, datalist)
        self.resource: str | None = None
        self.grant_id: str | None = None

    @property
    def args(self) -> dict[str, str]:
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


class S256Only(CodeChallenge):
    """PKCE for every client, S256 only: a missing challenge and ``plain`` are refused at /authorize."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge and code_challenge_method=S256.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Only code_challenge_method=S256 is supported.")
        super().validate_code_challenge(grant, redirect_uri)

    def validate_code_verifier(self, grant: Any, result: Any) -> None:
        if not grant.request.form.get("code_verifier"):
            raise InvalidRequestError("Missing 'code_verifier'.")
        super().validate_code_verifier(grant, result)


class PrivateKeyJwt(JWTBearerClientAssertion):
    """RFC 7523 client authentication; keys were fetched before the transaction (``client_keys``)."""

    CLIENT_AUTH_METHOD = "private_key_jwt"

    def __init__(self, server: OAuthServer) -> None:
        super().__init__(validate_jti=True, leeway=30)
        self.server = server

    def get_audiences(self) -> list[str]:
        return [self.server.config.token_endpoint, self.server.config.issuer]

    def process_assertion_claims(self, assertion: str, resolve_key: Any) -> Any:
        try:
            token = jwt.decode(assertion, resolve_key, algorithms=ASSERTION_ALGORITHMS)
        except (JoseError, ValueError, TypeError) as exc:
            raise InvalidClientError(description=f"The client assertion is invalid ({_why(exc)}).") from None
        self.verify_claims(token.claims)
        return token.claims

    def resolve_client_public_key(self, client: Client) -> KeySet:
        keys = self.server.client_keys
        if keys is None:
            raise InvalidClientError(description="The client's public keys are unavailable.")
        return keys

    def verify_claims(self, claims: Any) -> None:
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] > time.time() + 600:
            raise InvalidClientError(description="The client assertion needs an exp within 10 minutes.")
        super().verify_claims(claims)

    def validate_jti(self, claims: dict[str, Any], jti: str) -> bool:
        return self.server.first_use_of_jti(str(claims["sub"]), str(jti), int(claims["exp"]))


def _why(exc: Exception) -> str:
    text = getattr(exc, "description", None) or getattr(exc, "error", None) or type(exc).__name__
    return str(text).replace('"', "'")[:120]


class AuthorizationCodeGrant(_AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    server: OAuthServer

    def validate_authorization_request(self) -> str:
        redirect_uri = super().validate_authorization_request()
        # Unknown scopes are dropped, not refused (clients ask for "openid" and the like); with none
        # requested, the client's registered scope or, failing that, every scope (the consent page lists them).
        catalog, client = self.server.config.catalog, self.request.client
        requested = self.request.payload.scope
        scope = self.request.scope if requested else (client.scope if client.scope is not None else " ".join(
            catalog.names))
        self.request.scope = " ".join(catalog.known((scope or "").split()))
        try:
            self.request.resource = self.server.bound_resource(self.request.payload.data.get("resource"))
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def save_authorization_code(self, code: str, request: FormRequest) -> None:
        data = request.payload.data
        grants = self.server.uow.repository(GrantRepository)
        grants.sweep()
        grants.add(AuthorizationCode(
            code_hash=digest(code), client_id=request.client.client_id, account_id=request.user.id,
            redirect_uri=data.get("redirect_uri") or None,
            scope=request.scope or "", resource=request.resource,
            code_challenge=data["code_challenge"], code_challenge_method=data["code_challenge_method"],
            expires_at=int(time.time()) + self.server.config.code_ttl))

    def query_authorization_code(self, code: str, client: Client) -> AuthorizationCode | None:
        grants = self.server.uow.repository(GrantRepository)
        row = grants.code_for_update(digest(code))
        if row is None or row.client_id != client.client_id:
            return None
        if row.redeemed_at is not None:
            verifier = self.request.form.get("code_verifier") or ""
            if time.time() - row.redeemed_at <= CODE_RETRY_WINDOW and compare_s256_code_challenge(
                    verifier, row.code_challenge):
                # The same client, proving the same PKCE secret, seconds later: a retried request whose
                # answer was lost. Refused, but what the first one issued stays valid.
                log.info("oauth.code_retried", client_id=client.client_id, grant=row.grant_id)
                return None
            # A replayed code: whoever holds it may have stolen it; end what the first use produced.
            grants.revoke(row.grant_id)
            log.warning("oauth.code_replayed", client_id=client.client_id, grant=row.grant_id)
            return None
        if row.expires_at < time.time():
            return None
        return _CodeView(row)  # type: ignore[return-value]

    def validate_token_request(self) -> None:
        super().validate_token_request()
        code = self.request.authorization_code
        self.request.resource = self.server.check_resource(self.request.form.get("resource"), code.row.resource)

    def delete_authorization_code(self, authorization_code: _CodeView) -> None:
        authorization_code.row.redeemed_at = int(time.time())
        authorization_code.row.grant_id = self.request.grant_id

    def authenticate_user(self, authorization_code: _CodeView) -> Account | None:
        return self.server.enabled_account(authorization_code.row.account_id)

    def generate_token(self, user: Account | None = None, scope: str | None = None, grant_type: str | None = None,
                       expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:
        code = self.request.authorization_code.row
        grant = OAuthGrant(id="grt_" + secrets.token_urlsafe(16), client_id=code.client_id, account_id=code.account_id,
                           scope=code.scope, resource=code.resource, created_at=int(time.time()))
        self.server.uow.repository(GrantRepository).add(grant)
        self.request.grant_id = grant.id
        return self.server.issue(grant, scope or "", include_refresh_token)


class _CodeView:
    """authlib's AuthorizationCodeMixin over a row."""

    def __init__(self, row: AuthorizationCode) -> None:
        self.row = row
        self.code_challenge = row.code_challenge
        self.code_challenge_method = row.code_challenge_method

    def get_redirect_uri(self) -> str | None:
        return self.row.redirect_uri

    def get_scope(self) -> str:
        return self.row.scope


class _TokenView:
    """authlib's TokenMixin over a grant (plus the refresh token row, for /token)."""

    def __init__(self, grant: OAuthGrant, refresh: RefreshToken | None = None, *, kind: str = "refresh_token",
                 claims: dict[str, Any] | None = None) -> None:
        self.grant = grant
        self.refresh = refresh
        self.kind = kind
        self.claims = claims or {}

    def check_client(self, client: Client) -> bool:
        return self.grant.client_id == client.client_id

    def get_scope(self) -> str:
        return self.grant.scope

    def is_expired(self) -> bool:
        expires = self.refresh.expires_at if self.refresh is not None else self.claims.get("exp", 0)
        return expires < time.time()

    def is_revoked(self) -> bool:
        return self.grant.revoked_at is not None or (
            self.refresh is not None and self.refresh.rotated_at is not None and self.grace_over)

    grace_over = False  # set by the server for refresh tokens rotated longer ago than the grace window


class RefreshTokenGrant(_RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True
    server: OAuthServer

    def authenticate_refresh_token(self, refresh_token: str) -> _TokenView | None:
        grants = self.server.uow.repository(GrantRepository)
        row = grants.refresh_for_update(digest(refresh_token))
        if row is None:
            return None
        grant = grants.grant(row.grant_id)
        now = time.time()
        if grant is None or grant.revoked_at is not None or row.expires_at < now:
            return None
        if row.rotated_at is not None and (now - row.rotated_at > self.server.config.refresh_grace
                                           or grants.successor_used(row)):
            # Used again after the grace window closed, or after the token it was exchanged for was itself
            # exchanged: two parties hold this grant's tokens, so it leaked. End the whole grant.
            grants.revoke(grant.id)
            log.warning("oauth.refresh_reused", client_id=grant.client_id, grant=grant.id)
            return None
        return _TokenView(grant, row)

    def _validate_token_scope(self, token: _TokenView) -> None:
        # A refresh may narrow the grant, to implied scopes too (recipes.write -> recipes.read), never widen it.
        requested = (self.request.payload.scope or "").split()
        if requested and not set(self.server.config.catalog.expand(token.grant.scope.split())) >= set(requested):
            raise InvalidScopeError()

    def validate_token_request(self) -> None:
        super().validate_token_request()
        grant = self.request.refresh_token.grant
        self.request.resource = self.server.check_resource(self.request.form.get("resource"), grant.resource)

    def authenticate_user(self, refresh_token: _TokenView) -> Account | None:
        account = self.server.enabled_account(refresh_token.grant.account_id)
        if account is None:
            raise InvalidGrantError("The account behind this grant is disabled.")
        return account

    def issue_token(self, user: Account, refresh_token: _TokenView) -> dict[str, Any]:
        scope = self.request.payload.scope or refresh_token.grant.scope
        return self.server.issue(refresh_token.grant, scope, include_refresh_token=True)

    def revoke_old_credential(self, refresh_token: _TokenView) -> None:
        old = refresh_token.refresh
        if old is None:
            return
        if old.rotated_at is None:
            old.rotated_at = int(time.time())
        elif old.successor_hash:
            # A retry within the grace window: the token it replaced before dies, so only one chain lives
            # (a thief racing the client inside the window cannot keep a parallel one).
            self.server.uow.repository(GrantRepository).expire_refresh(old.successor_hash)
        old.successor_hash = self.server.issued_refresh_hash


class _TokenLookup:
    """Finds the grant behind an access token (our JWT) or a refresh token, for /revoke and /introspect."""

    SUPPORTED_TOKEN_TYPES = ("access_token", "refresh_token")
    server: OAuthServer

    def query_token(self, token_string: str, token_type_hint: str | None) -> _TokenView | None:
        grants = self.server.uow.repository(GrantRepository)
        order = ["refresh_token", "access_token"] if token_type_hint != "access_token" else ["access_token",
                                                                                            "refresh_token"]
        for kind in order:
            if kind == "refresh_token":
                row = grants.refresh(digest(token_string))
                grant = grants.grant(row.grant_id) if row else None
                if grant is not None:
                    view = _TokenView(grant, row)
                    view.grace_over = bool(row.rotated_at and time.time() - row.rotated_at
                                           > self.server.config.refresh_grace)
                    return view
            else:
                claims = self.server.access_claims(token_string)
                grant = grants.grant(claims["grant"]) if claims and isinstance(claims.get("grant"), str) else None
                if grant is not None:
                    return _TokenView(grant, kind="access_token", claims=claims)
        return None


class RevocationEndpoint(_TokenLookup, _RevocationEndpoint):
    CLIENT_AUTH_METHODS = list(AUTH_METHODS)

    def check_params(self, request: FormRequest, client: Client) -> None:
        # RFC 7009 §2.1: an unknown hint is no error; every token type is searched.
        if "token" not in request.form:
            raise InvalidRequestError("Missing 'token'.")

    def revoke_token(self, token: _TokenView, request: FormRequest) -> None:
        # Revoking either token ends the grant: its refresh tokens and every access token issued from it.
        self.server.uow.repository(GrantRepository).revoke(token.grant.id)
        log.info("oauth.revoked", client_id=token.grant.client_id, grant=token.grant.id, token_type=token.kind)


class IntrospectionEndpoint(_TokenLookup, _IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = SECRET_AUTH  # RFC 7662 §2.1: the caller must authenticate

    def check_params(self, request: FormRequest, client: Client) -> None:
        # RFC 7662 §2.1: an unknown hint extends the search to every token type.
        if "token" not in request.form:
            raise InvalidRequestError("Missing 'token'.")

    def check_permission(self, token: _TokenView, client: Client, request: FormRequest) -> bool:
        return token.check_client(client)

    def introspect_token(self, token: _TokenView) -> dict[str, Any]:
        account = self.server.enabled_account(token.grant.account_id)
        if account is None:
            return {"active": False}
        body = {"active": True, "client_id": token.grant.client_id, "sub": token.grant.account_id,
                "aud": token.grant.resource, "iss": self.server.config.issuer}
        if token.refresh is not None:
            body.update(scope=token.grant.scope, token_type="refresh_token", exp=token.refresh.expires_at,
                        iat=token.refresh.created_at)
        else:
            body.update(scope=token.claims.get("scope", ""), token_type="Bearer", exp=token.claims["exp"],
                        iat=token.claims.get("iat"))
        return body


class GrantRepository:
    def __init__(self, session: Any) -> None:
        self.session = session

    def add(self, row: Any) -> None:
        self.session.add(row)
        self.session.flush()

    def code_for_update(self, code_hash: str) -> AuthorizationCode | None:
        return self.session.get(AuthorizationCode, code_hash, with_for_update=True, populate_existing=True)

    def grant(self, grant_id: str | None) -> OAuthGrant | None:
        return self.session.get(OAuthGrant, grant_id) if grant_id else None

    def refresh(self, token_hash: str) -> RefreshToken | None:
        return self.session.get(RefreshToken, token_hash)

    def refresh_for_update(self, token_hash: str) -> RefreshToken | None:
        return self.session.get(RefreshToken, token_hash, with_for_update=True, populate_existing=True)

    def revoke(self, grant_id: str | None) -> None:
        grant = self.grant(grant_id)
        if grant is not None and grant.revoked_at is None:
            grant.revoked_at = int(time.time())
            self.session.flush()

    def grant_active(self, grant_id: str, account_id: str) -> bool:
        grant = self.grant(grant_id)
        if grant is None or grant.revoked_at is not None or grant.account_id != account_id:
            return False
        account = self.session.get(Account, account_id)
        return account is not None and account.disabled_at is None

    def first_use_of_jti(self, jti_hash: str, expires_at: int) -> bool:
        """Record the assertion id; False if it was already there (atomic on both databases)."""
        self.session.execute(delete(ClientAssertion).where(ClientAssertion.expires_at < time.time() - 60))
        return insert_if_absent(self.session, ClientAssertion.__table__,
                                {"jti_hash": jti_hash, "expires_at": expires_at}, key=("jti_hash",))

    def successor_used(self, row: RefreshToken) -> bool:
        successor = self.refresh(row.successor_hash) if row.successor_hash else None
        return successor is not None and successor.rotated_at is not None

    def expire_refresh(self, token_hash: str) -> None:
        row = self.refresh_for_update(token_hash)
        if row is not None:
            row.expires_at = 0
            self.session.flush()

    def sweep(self) -> None:
        """Forget codes and refresh tokens that can no longer be used (opportunistic, on each new code)."""
        now = int(time.time())
        self.session.execute(delete(AuthorizationCode).where(AuthorizationCode.expires_at < now - 3600))
        self.session.execute(delete(RefreshToken).where(RefreshToken.expires_at < now))


class OAuthServer(AuthorizationServer):
    def __init__(self, config: ServerConfig, uow: UnitOfWork, *, client_keys: KeySet | None = None) -> None:
        super().__init__(scopes_supported=config.catalog.names)
        self.config = config
        self.uow = uow
        self.client_keys = client_keys
        self.issued_refresh_hash: str | None = None
        self._clients: dict[str, Client | None] = {}
        self.register_grant(AuthorizationCodeGrant, [S256Only(required=True)])
        self.register_grant(RefreshTokenGrant)
        self.register_client_auth_method("private_key_jwt", PrivateKeyJwt(self))
        self.register_endpoint(RevocationEndpoint)
        self.register_endpoint(IntrospectionEndpoint)

    # --- authlib's storage and framework hooks -------------------------------------------------
    def query_client(self, client_id: str) -> Client | None:
        if client_id not in self._clients:
            row = self.uow.repository(ClientRepository).get(client_id) if isinstance(client_id, str) else None
            self._clients[client_id] = Client.from_row(row) if row is not None else None
        return self._clients[client_id]

    def save_token(self, token: dict[str, Any], request: FormRequest) -> None:
        pass  # issue() stored what needs storing (the refresh token's digest) when it made the token

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def validate_requested_scope(self, scope: str | None) -> None:
        pass  # unknown scopes are dropped (get_allowed_scope), not refused: clients ask for "openid" and the like

    def create_oauth2_request(self, request: FormRequest) -> FormRequest:
        return request

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> tuple[int, Any, dict]:
        headers_out = dict(headers)
        if "Location" in headers_out:
            # RFC 9207: the issuer on every authorization response, success and error alike.
            headers_out["Location"] = add_params_to_uri(headers_out["Location"], [("iss", self.config.issuer)])
        return status, body, headers_out

    # --- our rules --------------------------------------------------------------------------------
    def bound_resource(self, requested: str | None) -> str:
        if requested is None:
            return self.config.resources[0]
        resource = normalise_resource(requested)
        if resource is None or resource not in self.config.resources:
            raise InvalidTargetError("The requested resource is not served by this authorization server.")
        return resource

    def check_resource(self, requested: str | None, bound: str) -> str:
        if requested is not None and normalise_resource(requested) != bound:
            raise InvalidTargetError("The resource differs from the one this grant was issued for.")
        return bound

    def enabled_account(self, account_id: str) -> Account | None:
        account = self.uow.repository(AccountRepository).get(account_id)
        return account if account is not None and account.disabled_at is None else None

    def issue(self, grant: OAuthGrant, scope: str, include_refresh_token: bool) -> dict[str, Any]:
        access = sign_access_token(self.config.keys, issuer=self.config.issuer, audience=grant.resource,
                                   subject=grant.account_id, client_id=grant.client_id, scope=scope,
                                   grant_id=grant.id, ttl=self.config.access_ttl)
        token = {"access_token": access, "token_type": "Bearer", "expires_in": self.config.access_ttl, "scope": scope}
        if include_refresh_token:
            refresh = "rt_" + secrets.token_urlsafe(32)
            now = int(time.time())
            self.issued_refresh_hash = digest(refresh)
            row = RefreshToken(token_hash=self.issued_refresh_hash, grant_id=grant.id, created_at=now,
                               expires_at=now + self.config.refresh_ttl)
            self.uow.repository(GrantRepository).add(row)
            token["refresh_token"] = refresh
        log.info("oauth.token_issued", client_id=grant.client_id, subject=grant.account_id, grant=grant.id,
                 scope=scope, refresh=include_refresh_token)
        return token

    def access_claims(self, token: str) -> dict[str, Any] | None:
        return decode_claims(token, self.config.keys.verify_keys, self.config.keys.algorithms,
                             issuer=self.config.issuer, audience=self.config.resources[0], require_typ=True)

    def first_use_of_jti(self, client_id: str, jti: str, expires_at: int) -> bool:
        return self.uow.repository(GrantRepository).first_use_of_jti(digest(f"{client_id}\0{jti}"), expires_at)
