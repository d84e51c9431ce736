"""Access tokens of the built-in authorization server: JWTs per RFC 9068, signed with its keys, and the
``TokenVerifier`` the SDK's bearer backend calls on every /mcp request when this server issued them."""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable

from joserfc import jwt
from mcp.server.auth.provider import AccessToken

from app.auth.scopes import ScopeCatalog
from app.auth.tokens import AT_JWT, VerifiedTokens, decode_claims, scopes_of
from app.authserver.keys import KeyRing


def sign_access_token(keys: KeyRing, *, issuer: str, audience: str, subject: str, client_id: str, scope: str,
                      grant_id: str, ttl: int) -> str:
    now = int(time.time())
    claims = {"iss": issuer, "sub": subject, "aud": audience, "client_id": client_id, "scope": scope,
              "iat": now, "nbf": now, "exp": now + ttl, "jti": secrets.token_urlsafe(16), "grant": grant_id}
    key = keys.current
    return jwt.encode({"alg": key.alg, "kid": key.kid, "typ": AT_JWT}, claims, key.key)


class BuiltinTokenVerifier:
    """Our own tokens: signature by ``kid`` from our JWKS, ``typ``, ``iss``, ``aud``, time, and not revoked."""

    def __init__(self, keys: KeyRing, *, issuer: str, audience: str, catalog: ScopeCatalog,
                 grant_active: Callable[[str, str], Awaitable[bool]]) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.catalog = catalog
        self.grant_active = grant_active  # (grant id, subject) -> still valid (not revoked, account enabled)
        self.verified = VerifiedTokens()

    async def verify_token(self, token: str) -> AccessToken | None:
        known = self.verified.get(token)  # our keys are this process's for its lifetime: the kid needs no check
        verified = known[0] if known is not None else None
        if verified is None:
            claims = decode_claims(token, self.keys.verify_keys, self.keys.algorithms, issuer=self.issuer,
                                   audience=self.audience, require_typ=True)
            if claims is None or not isinstance(claims.get("grant"), str):
                return None
            verified = AccessToken(token=token, client_id=str(claims.get("client_id", "")),
                                   subject=str(claims["sub"]), scopes=self.catalog.expand(scopes_of(claims)),
                                   expires_at=int(claims["exp"]), resource=self.audience,
                                   claims={"iss": claims["iss"], "grant": claims["grant"]})
            self.verified.keep(token, verified)
        # Both set above, when this verifier made it (kept, or now).
        assert verified.claims is not None and verified.subject is not None
        # Every call: the grant may have been revoked, or its account disabled, since the token was issued.
        if not await self.grant_active(verified.claims["grant"], verified.subject):
            return None
        return verified
