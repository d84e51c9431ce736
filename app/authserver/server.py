"""The authorization server's protocol logic, on authlib's grant and endpoint classes (``grants.py``).

One ``OAuthServer`` is built per HTTP request, inside a worker thread, around ONE unit of
work: authlib is synchronous, and a token request (code redemption, grant creation,
refresh rotation) then commits or rolls back as a whole. Network work (client documents,
client keys) is done by the caller before, on the event loop; this module never fetches.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

import structlog
from authlib.common.urls import add_params_to_uri
from authlib.oauth2 import AuthorizationServer, OAuth2Request
from joserfc.jwk import KeySet

from app.auth.tokens import decode_claims
from app.authserver.accounts import AccountRepository
from app.authserver.clients import Client, ClientRepository, digest
from app.authserver.grants import (
    AuthorizationCodeGrant,
    IntrospectionEndpoint,
    PrivateKeyJwt,
    RefreshTokenGrant,
    RevocationEndpoint,
    S256Only,
)
from app.authserver.models import Account, OAuthGrant, RefreshToken
from app.authserver.protocol import FormRequest, InvalidTargetError, OAuthReply, ServerConfig, normalise_resource
from app.authserver.repository import GrantRepository
from app.authserver.tokens import sign_access_token
from app.db import UnitOfWork

log = structlog.get_logger(__name__)


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
    # None for an unknown client, which authlib answers invalid_client (its stub promises a client always).
    def query_client(  # pyright: ignore[reportIncompatibleMethodOverride] (None: see above)
            self, client_id: str) -> Client | None:
        if client_id not in self._clients:
            row = self.uow.repository(ClientRepository).get(client_id) if isinstance(client_id, str) else None
            self._clients[client_id] = Client.from_row(row) if row is not None else None
        return self._clients[client_id]

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        pass  # issue() stored what needs storing (the refresh token's digest) when it made the token

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def validate_requested_scope(self, scope: str | None) -> None:
        pass  # unknown scopes are dropped (get_allowed_scope), not refused: clients ask for "openid" and the like

    def create_oauth2_request(self, request: FormRequest) -> FormRequest:
        return request

    # Headers as authlib passes them, a list of pairs (its stub says a mapping): dict() takes either.
    def handle_response(self, status: int, body: Any,
                        headers: Mapping[str, str] | list[tuple[str, str]]) -> OAuthReply:
        headers_out = dict(headers)
        if "Location" in headers_out:
            # RFC 9207: the issuer on every authorization response, success and error alike.
            headers_out["Location"] = add_params_to_uri(headers_out["Location"], [("iss", self.config.issuer)])
        return OAuthReply(status, body, headers_out)

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
