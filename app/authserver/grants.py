"""authlib's grants and endpoints, with this server's rules: PKCE S256 only, private_key_jwt with single-use
assertions, codes redeemed once (a second redemption revokes the grant), refresh tokens rotated with a grace
window, revocation and introspection of our own tokens only."""

from __future__ import annotations

import secrets
import time
from typing import Any

import structlog
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    ClientMixin,
    InvalidClientError,
    InvalidGrantError,
    InvalidRequestError,
    InvalidScopeError,
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

from app.authserver.clients import AUTH_METHODS, Client, ClientRepository, digest
from app.authserver.models import Account, AuthorizationCode, OAuthGrant, RefreshToken
from app.authserver.protocol import ASSERTION_ALGORITHMS, CODE_RETRY_WINDOW, SECRET_AUTH, FormRequest, GrantServer
from app.authserver.repository import GrantRepository, replaced

log = structlog.get_logger(__name__)


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

    # The type checker reads authlib through typeshed's stubs, written for authlib 1.6; the ignores
    # marked "1.6's stub" are where the 1.9 we run differs: this name is Final there (authlib reads
    # it from the instance, for a subclass to set), token_url a required argument (deprecated since:
    # get_audiences replaces it), resolve_client_public_key also takes the headers (no longer), and
    # verify_claims is missing.
    CLIENT_AUTH_METHOD = "private_key_jwt"  # pyright: ignore[reportGeneralTypeIssues] (1.6's stub)

    def __init__(self, server: GrantServer) -> None:
        super().__init__(validate_jti=True, leeway=30)  # pyright: ignore[reportCallIssue] (1.6's)
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

    def resolve_client_public_key(  # pyright: ignore[reportIncompatibleMethodOverride] (1.6's stub)
            self, client: Client) -> KeySet:
        keys = self.server.client_keys
        if keys is None:
            raise InvalidClientError(description="The client's public keys are unavailable.")
        return keys

    def verify_claims(self, claims: Any) -> None:
        if not isinstance(claims.get("exp"), int | float) or claims["exp"] > time.time() + 600:
            raise InvalidClientError(description="The client assertion needs an exp within 10 minutes.")
        super().verify_claims(claims)  # pyright: ignore[reportAttributeAccessIssue] (1.6's stub)

    def validate_jti(self, claims: dict[str, Any], jti: str) -> bool:
        return self.server.first_use_of_jti(str(claims["sub"]), str(jti), int(claims["exp"]))


def _why(exc: Exception) -> str:
    text = getattr(exc, "description", None) or getattr(exc, "error", None) or type(exc).__name__
    return str(text).replace('"', "'")[:120]


class AuthorizationCodeGrant(_AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    server: GrantServer
    # authlib types it as any OAuth2Request: it is the FormRequest that
    # OAuthServer.create_oauth2_request returned.
    request: FormRequest  # pyright: ignore[reportIncompatibleVariableOverride] (see above)

    def validate_authorization_request(self) -> str:
        redirect_uri = super().validate_authorization_request()
        # Unknown scopes are dropped, not refused (clients ask for "openid" and the like); with none
        # requested, the client's registered scope or, failing that, every scope (the consent page lists them).
        catalog, client = self.server.config.catalog, self.request.client
        assert client is not None  # found by authlib's validation above, which raises without one
        requested = self.request.payload.scope
        scope = self.request.scope if requested else (client.scope if client.scope is not None else " ".join(
            catalog.names))
        # A setter in authlib 1.9, which typeshed's 1.6 stub has not.
        self.request.scope = " ".join(  # pyright: ignore[reportAttributeAccessIssue] (see above)
            catalog.known((scope or "").split()))
        try:
            self.request.resource = self.server.bound_resource(self.request.payload.data.get("resource"))
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def generate_authorization_code(self) -> str:
        # A prefix of its own, like refresh tokens' rt_: the log's scrubber (app.logging) and secret scanners
        # recognise a code wherever it turns up.
        return "ac_" + secrets.token_urlsafe(32)

    # authlib passes self.request (see request above), its client and the consenting account set.
    def save_authorization_code(  # pyright: ignore[reportIncompatibleMethodOverride] (see above)
            self, code: str, request: FormRequest) -> None:
        assert request.client is not None and request.user is not None
        data = request.payload.data
        grants, clients = self.server.uow.repository(GrantRepository), self.server.uow.repository(ClientRepository)
        expires_at = int(time.time()) + self.server.config.code_ttl
        # An unlinked self-registered client outlives the code it was just given, whatever its age: held before
        # the sweep, which would otherwise take a client whose day ended since it was read.
        clients.hold_until(request.client.client_id, expires_at + CODE_RETRY_WINDOW + 60)
        grants.sweep()
        clients.sweep_unused()
        grants.add(AuthorizationCode(
            code_hash=digest(code), client_id=request.client.client_id, account_id=request.user.id,
            redirect_uri=data.get("redirect_uri") or None,
            scope=request.scope or "", resource=request.resource,
            code_challenge=data["code_challenge"], code_challenge_method=data["code_challenge_method"],
            expires_at=expires_at))

    def query_authorization_code(self, code: str, client: ClientMixin) -> _CodeView | None:
        grants, client_id = self.server.uow.repository(GrantRepository), client.get_client_id()
        row = grants.code_for_update(digest(code))
        if row is None or row.client_id != client_id:
            return None
        if row.redeemed_at is not None:
            verifier = self.request.form.get("code_verifier") or ""
            if time.time() - row.redeemed_at <= CODE_RETRY_WINDOW and compare_s256_code_challenge(
                    verifier, row.code_challenge):
                # The same client, proving the same PKCE secret, seconds later: a retried request whose
                # answer was lost. Refused, but what the first one issued stays valid.
                log.info("oauth.code_retried", client_id=client_id, grant=row.grant_id)
                return None
            # A replayed code: whoever holds it may have stolen it; end what the first use produced.
            grants.revoke(row.grant_id)
            log.warning("oauth.code_replayed", client_id=client_id, grant=row.grant_id)
            return None
        if row.expires_at < time.time():
            return None
        return _CodeView(row)

    def validate_token_request(self) -> None:
        super().validate_token_request()
        code = self.request.authorization_code
        assert code is not None  # found by authlib's validation above, which raises without one
        self.request.resource = self.server.check_resource(self.request.form.get("resource"), code.row.resource)

    def delete_authorization_code(self, authorization_code: _CodeView) -> None:
        authorization_code.row.redeemed_at = int(time.time())
        authorization_code.row.grant_id = self.request.grant_id

    def authenticate_user(self, authorization_code: _CodeView) -> Account | None:
        return self.server.enabled_account(authorization_code.row.account_id)

    def generate_token(self, user: Account | None = None, scope: str | None = None, grant_type: str | None = None,
                       expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:
        assert self.request.authorization_code is not None  # validate_token_request found it
        code = self.request.authorization_code.row
        grant = OAuthGrant(id="grt_" + secrets.token_urlsafe(16), client_id=code.client_id, account_id=code.account_id,
                           scope=code.scope, resource=code.resource, created_at=int(time.time()))
        self.server.uow.repository(GrantRepository).add(grant)
        self.server.uow.repository(ClientRepository).linked(code.client_id)  # a client someone linked with stays
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
    server: GrantServer
    # authlib types it as any OAuth2Request: it is the FormRequest that
    # OAuthServer.create_oauth2_request returned.
    request: FormRequest  # pyright: ignore[reportIncompatibleVariableOverride] (see above)

    # A _TokenView, which authlib hands back to the methods below (its stub says a TokenMixin, and
    # those methods take any); None, which it answers invalid_grant.
    def authenticate_refresh_token(  # pyright: ignore[reportIncompatibleMethodOverride] (see above)
            self, refresh_token: str) -> _TokenView | None:
        grants = self.server.uow.repository(GrantRepository)
        row = grants.refresh_for_update(digest(refresh_token))
        if row is None:
            return None
        grant = grants.grant(row.grant_id)
        now = time.time()
        if grant is None or grant.revoked_at is not None:
            return None
        if abs(row.expires_at) < now:
            return None
        late = row.rotated_at is not None and (now - row.rotated_at > self.server.config.refresh_grace
                                               or grants.successor_used(row))
        if late or replaced(row.expires_at):
            # Used again after the grace window closed, or after the token it was exchanged for was itself
            # exchanged, or it is the token a retry inside the window replaced (whoever retried holds the
            # other chain): two parties hold this grant's tokens, so it leaked. End the whole grant
            # (RFC 9700 §4.14.2, refresh token reuse detection).
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
        token = self.request.refresh_token
        assert token is not None  # found by authlib's validation above, which raises without one
        grant = token.grant
        self.request.resource = self.server.check_resource(self.request.form.get("resource"), grant.resource)

    def authenticate_user(self, refresh_token: _TokenView) -> Account | None:
        account = self.server.enabled_account(refresh_token.grant.account_id)
        if account is None:
            raise InvalidGrantError("The account behind this grant is disabled.")
        return account

    def issue_token(  # pyright: ignore[reportIncompatibleMethodOverride] (see above)
            self, user: Account, refresh_token: _TokenView) -> dict[str, Any]:
        scope = self.request.payload.scope or refresh_token.grant.scope
        return self.server.issue(refresh_token.grant, scope, include_refresh_token=True)

    def revoke_old_credential(  # pyright: ignore[reportIncompatibleMethodOverride] (likewise)
            self, refresh_token: _TokenView) -> None:
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
    server: GrantServer

    def query_token(self, token_string: str, token_type_hint: str | None) -> _TokenView | None:
        grants = self.server.uow.repository(GrantRepository)
        order = ["refresh_token", "access_token"] if token_type_hint != "access_token" else ["access_token",
                                                                                            "refresh_token"]
        for kind in order:
            if kind == "refresh_token":
                row = grants.refresh(digest(token_string))
                grant = grants.grant(row.grant_id) if row is not None else None
                if row is not None and grant is not None:
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
