"""Access tokens: JWTs per RFC 9068. What any issuer's token is checked for (``decode_claims``), and the
``TokenVerifier`` of an external IdP's tokens (the built-in authorization server has its own, in
``app.authserver.tokens``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
import structlog
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.provider import AccessToken

from app.auth.scopes import ScopeCatalog
from app.net import OutboundGuard, OutboundRefused

log = structlog.get_logger(__name__)
LEEWAY_S = 30
AT_JWT = "at+jwt"


def decode_claims(token: str, key_set: KeySet, algorithms: list[str], *, issuer: str, audience: str,
                  require_typ: bool) -> dict[str, Any] | None:
    """The claims of a token that is well signed, for us, from ``issuer`` and current; otherwise None."""
    try:
        decoded = jwt.decode(token, key_set, algorithms=algorithms)
        registry = jwt.JWTClaimsRegistry(leeway=LEEWAY_S, iss={"essential": True, "value": issuer},
                                         aud={"essential": True, "value": audience},
                                         exp={"essential": True}, sub={"essential": True})
        registry.validate(decoded.claims)
    except (JoseError, ValueError, TypeError):
        return None
    typ = str(decoded.header.get("typ", "")).lower().removeprefix("application/")
    if require_typ and typ != AT_JWT:
        return None  # an ID token or another JWT signed by the same key is not an access token
    return decoded.claims


def scopes_of(claims: dict[str, Any]) -> list[str]:
    scope = claims.get("scope", claims.get("scp", ""))
    return scope.split() if isinstance(scope, str) else [s for s in scope if isinstance(s, str)]


class VerifiedTokens:
    """Access tokens already verified (signature, issuer, audience, type), remembered until they expire.

    ChatGPT sends the same token with every call of a linked user for its lifetime; checking its signature and
    claims again each time was most of a bearer call's cost. A verified JWT stays verified: what can end one
    early (a revoked grant, a disabled account) is not in the token and is checked apart. Only tokens that
    verified are kept (a stream of forged ones costs what it always did, and takes no room); at most
    ``max_entries``, the expired first, then the oldest, leave to make room.
    """

    def __init__(self, max_entries: int = 4096, *, clock: Callable[[], float] = time.time) -> None:
        self.max_entries = max_entries
        self._clock = clock
        self._tokens: dict[str, tuple[AccessToken, str | None]] = {}

    def get(self, token: str) -> tuple[AccessToken, str | None] | None:
        """The token as verified, and the id of the key that signed it (the caller checks it is still trusted)."""
        found = self._tokens.get(token)
        if found is not None and self._expired(found[0], self._clock()):
            del self._tokens[token]
            return None
        return found

    def keep(self, token: str, verified: AccessToken, kid: str | None = None) -> None:
        if len(self._tokens) >= self.max_entries:
            now = self._clock()
            for stale in [t for t, (v, _) in self._tokens.items() if self._expired(v, now)]:
                del self._tokens[stale]
            while len(self._tokens) >= self.max_entries:
                del self._tokens[next(iter(self._tokens))]
        self._tokens[token] = (verified, kid)

    @staticmethod
    def _expired(verified: AccessToken, now: float) -> bool:
        return verified.expires_at is not None and verified.expires_at + LEEWAY_S < now


class RemoteJwks:
    """An IdP's JWKS, fetched through the outbound guard, cached, refetched on an unknown ``kid``
    (at most once per ``min_refresh`` seconds, so a stream of forged kids cannot hammer the IdP)."""

    def __init__(self, url: str, guard: OutboundGuard, *, ttl: float = 600, min_refresh: float = 5) -> None:
        self.url = url
        self.guard = guard
        self.ttl = ttl
        self.min_refresh = min_refresh
        self._keys: KeySet | None = None
        self._fetched_at = 0.0
        self._lock = anyio.Lock()

    async def key_set(self, kid: str | None) -> KeySet | None:
        now = time.monotonic()
        stale = self._keys is None or now - self._fetched_at > self.ttl
        unknown = kid is not None and self._keys is not None and not any(k.kid == kid for k in self._keys)
        if stale or (unknown and now - self._fetched_at > self.min_refresh):
            async with self._lock:
                if self._fetched_at == 0.0 or time.monotonic() - self._fetched_at > min(self.min_refresh, self.ttl):
                    await self._refresh()
        return self._keys

    async def _refresh(self) -> None:
        try:
            fetched = await self.guard.fetch(self.url, headers={"accept": "application/json"})
            if fetched.status != 200:
                raise OutboundRefused(f"JWKS answered HTTP {fetched.status}")
            self._keys = KeySet.import_key_set(json.loads(fetched.body))
        except (OutboundRefused, ValueError, JoseError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            log.warning("auth.jwks_unavailable", url=self.url, error=str(exc))  # keep serving the cached keys
        self._fetched_at = time.monotonic()


class ExternalTokenVerifier:
    """An external IdP's JWTs, checked the same way as ours; revocation is the IdP's business (short lifetimes), so
    a token that verified once is good until it expires."""

    ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "ES512", "EdDSA"]

    def __init__(self, jwks: RemoteJwks, *, issuer: str, audience: str, resource: str, catalog: ScopeCatalog) -> None:
        self.jwks = jwks
        self.issuer = issuer
        self.audience = audience
        self.resource = resource
        self.catalog = catalog
        self.verified = VerifiedTokens()

    async def verify_token(self, token: str) -> AccessToken | None:
        if (known := self.verified.get(token)) is not None:
            # Still signed by a key the IdP publishes: one it dropped (a rotation, a compromise) ends its tokens
            # here as soon as the key set is fetched again, as it would without this cache.
            verified, kid = known
            keys = await self.jwks.key_set(None)
            if keys is not None and any(k.kid == kid for k in keys):
                return verified
        try:
            kid = jws.extract_compact(token.encode()).headers().get("kid")
        except (JoseError, ValueError, UnicodeError):
            return None
        keys = await self.jwks.key_set(kid)
        if keys is None:
            return None
        claims = decode_claims(token, keys, self.ALGORITHMS, issuer=self.issuer, audience=self.audience,
                               require_typ=False)
        if claims is None:
            return None
        verified = AccessToken(token=token, client_id=str(claims.get("client_id") or claims.get("azp") or ""),
                               subject=str(claims["sub"]), scopes=self.catalog.expand(scopes_of(claims)),
                               expires_at=int(claims["exp"]), resource=self.resource,
                               claims={k: claims[k] for k in ("iss", "name", "email", "preferred_username")
                                       if k in claims})
        self.verified.keep(token, verified, kid)
        return verified
