"""The relying-party side of upstream OpenID Connect login: discovery, the authorization request, the code
exchange and the ID token check, every call through the outbound guard.

authlib's OAuth2Client builds the authorization request (PKCE S256, ``state``, ``nonce``) and authlib prepares the
token request's body; the POST itself goes through ``OutboundGuard.post_form`` (authlib's own httpx client would
bypass the guard's address checks). The ID token is verified with joserfc: a signature by a key of the provider's
JWKS (algorithms it announces, never ``none`` or a MAC), ``iss`` byte for byte, ``aud`` (and ``azp`` when there
are several), ``exp``/``iat`` with a minute of leeway, and the ``nonce`` of this browser's flow. The upstream
tokens are used for the UserInfo call and then dropped: nothing of them is stored, logged or given to a client.
"""

from __future__ import annotations

import base64
import json
import time
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, quote_plus

import anyio
import structlog
from authlib.oauth2.client import OAuth2Client
from authlib.oauth2.rfc6749.parameters import prepare_token_request
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet, KeySetSerialization
from joserfc.jwt import JWTClaimsRegistry

from app.authserver.upstream_config import OidcProvider
from app.net.guard import OutboundGuard, OutboundRefused

log = structlog.get_logger(__name__)
# Asymmetric only: a MAC (HS256 keyed with the client secret) would let anyone holding the secret mint identities.
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
DISCOVERY_TTL = 3600
KEYS_TTL = 3600
FAILURE_TTL = 30
STALE_TTL = 24 * 3600
# An unknown kid refetches the JWKS (a rotation), at most this often.
KEYS_REFETCH = 60
LEEWAY = 60
MAX_DOCUMENT = 256 * 1024


class UpstreamError(Exception):
    """The provider could not be used or its answer was not acceptable; the message is for the log and the page
    (no token, code or secret in it)."""


class NotAllowed(Exception):
    """A valid identity this deployment does not admit (e-mail domain, tenant); the message is for the person."""


@dataclass(frozen=True)
class Discovered:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    token_auth_methods: tuple[str, ...]
    algorithms: tuple[str, ...]
    # RFC 9207: the provider names itself in every authorization response, so one without iss is refused.
    iss_parameter: bool = False


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in: the account is keyed by (issuer, subject), never by e-mail."""

    provider: str
    issuer: str
    subject: str
    name: str | None
    email: str | None
    email_verified: bool


@dataclass(frozen=True)
class Flow:
    """What a browser's round trip to the provider must come back with (kept in its signed cookie)."""

    state: str
    nonce: str
    verifier: str


def _json(fetched: Any, what: str) -> dict[str, Any]:
    if fetched.status != 200:
        raise UpstreamError(f"{what} answered HTTP {fetched.status}")
    try:
        document = json.loads(fetched.body)
    except (ValueError, UnicodeError, RecursionError):
        raise UpstreamError(f"{what} is not JSON") from None
    if not isinstance(document, dict):
        raise UpstreamError(f"{what} is not a JSON object")
    return document


def _https(url: object, issuer: str) -> bool:
    """An endpoint of the provider's: https, or http when the issuer itself is (a loopback test provider)."""
    return isinstance(url, str) and (url.startswith("https://") or (issuer.startswith("http://")
                                                                      and url.startswith("http://")))


class _Cached:
    """One document of the provider's, fetched by one caller at a time (the others wait for that fetch rather than
    repeating it), kept ``ttl``; a failure is remembered ``FAILURE_TTL`` (a provider that is down costs one
    timeout, not one per person waiting), and a refresh that fails serves the last good copy up to ``STALE_TTL``."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.value: tuple[float, Any] | None = None
        self.failed: tuple[float, UpstreamError] | None = None
        self.lock = anyio.Lock()

    async def get(self, fetch: Callable[[], Awaitable[Any]], *, force: bool = False) -> Any:
        async with self.lock:
            now = time.monotonic()
            if self.value is not None and not force and now - self.value[0] < self.ttl:
                return self.value[1]
            if self.failed is not None and now - self.failed[0] < FAILURE_TTL:
                if self.value is not None and now - self.value[0] < STALE_TTL:
                    return self.value[1]
                raise self.failed[1]
            try:
                value = await fetch()
            except UpstreamError as exc:
                self.failed = (time.monotonic(), exc)
                if self.value is not None and now - self.value[0] < STALE_TTL:
                    log.warning("oauth.upstream_stale", reason=str(exc))
                    return self.value[1]
                raise
            self.value, self.failed = (time.monotonic(), value), None
            return value


class UpstreamProvider:
    """One configured provider, for one process: its discovery document and keys are cached."""

    def __init__(self, config: OidcProvider, guard: OutboundGuard, redirect_uri: str) -> None:
        self.config = config
        self.guard = guard
        self.redirect_uri = redirect_uri
        self._discovered = _Cached(DISCOVERY_TTL)
        self._keys = _Cached(KEYS_TTL)
        self._refetched_at = -float(KEYS_REFETCH)

    @property
    def id(self) -> str:
        return self.config.id

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def discovery_url(self) -> str:
        return self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"

    async def discovery(self) -> Discovered:
        async def fetch() -> Discovered:
            try:
                fetched = await self.guard.fetch(self.discovery_url, max_bytes=MAX_DOCUMENT)
            except OutboundRefused as exc:
                raise UpstreamError(f"the discovery document could not be fetched: {exc}") from None
            return self._validated(_json(fetched, "the discovery document"))
        return await self._discovered.get(fetch)

    def _validated(self, document: dict[str, Any]) -> Discovered:
        issuer = self.config.issuer
        if document.get("issuer") != issuer:  # Discovery §4.3: exactly the issuer it was fetched for
            raise UpstreamError(f"the discovery document names the issuer {str(document.get('issuer'))[:200]!r}, "
                                f"not {issuer!r}")
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not _https(document.get(key), issuer):
                raise UpstreamError(f"the discovery document's {key} is missing or not https")
        userinfo = document.get("userinfo_endpoint")
        methods = document.get("token_endpoint_auth_methods_supported")
        methods = methods if isinstance(methods, list) and methods else ["client_secret_basic"]
        announced = document.get("id_token_signing_alg_values_supported") or ["RS256"]
        algorithms = tuple(a for a in SIGNING_ALGORITHMS if isinstance(announced, list) and a in announced)
        if not algorithms:
            raise UpstreamError("the provider signs ID tokens with no algorithm this server accepts "
                                f"({', '.join(SIGNING_ALGORITHMS)})")
        return Discovered(issuer=issuer, authorization_endpoint=document["authorization_endpoint"],
                          token_endpoint=document["token_endpoint"], jwks_uri=document["jwks_uri"],
                          userinfo_endpoint=userinfo if _https(userinfo, issuer) else None,
                          token_auth_methods=tuple(m for m in methods if isinstance(m, str)), algorithms=algorithms,
                          iss_parameter=document.get("authorization_response_iss_parameter_supported") is True)

    def authorization_url(self, found: Discovered, flow: Flow) -> str:
        client = OAuth2Client(None, client_id=self.config.client_id, scope=" ".join(self.config.scopes),
                              redirect_uri=self.redirect_uri, code_challenge_method="S256")
        url, _ = client.create_authorization_url(found.authorization_endpoint, state=flow.state,
                                                 code_verifier=flow.verifier, nonce=flow.nonce)
        return url

    async def keys(self, found: Discovered, *, refetch: bool = False) -> KeySet:
        async def fetch() -> KeySet:
            try:
                document = _json(await self.guard.fetch(found.jwks_uri, max_bytes=MAX_DOCUMENT), "the JWKS")
                # A parsed document, shape unknown: joserfc checks it as it imports (what it
                # raises is caught below).
                return KeySet.import_key_set(cast(KeySetSerialization, document))
            except OutboundRefused as exc:
                raise UpstreamError(f"the JWKS could not be fetched: {exc}") from None
            except (JoseError, ValueError, TypeError, KeyError, AttributeError):
                raise UpstreamError("the JWKS holds no usable key") from None
        # An unknown kid refetches (a rotation), but tokens naming made-up kids cost one fetch a minute.
        now = time.monotonic()
        force = refetch and now - self._refetched_at >= KEYS_REFETCH
        if force:
            self._refetched_at = now
        return await self._keys.get(fetch, force=force)

    async def redeem(self, found: Discovered, code: str, flow: Flow) -> dict[str, Any]:
        """The token response for ``code`` (PKCE verifier, our redirect URI), the client authenticated as the
        provider supports: HTTP Basic, else the form, else none (a public client: no secret configured)."""
        body = prepare_token_request("authorization_code", code=code, redirect_uri=self.redirect_uri,
                                     code_verifier=flow.verifier)
        form = dict(_pairs(body))
        headers = {"accept": "application/json"}
        secret = self.config.client_secret
        if secret and "client_secret_basic" in found.token_auth_methods:
            pair = f"{_form_encode(self.config.client_id)}:{_form_encode(secret)}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif secret:
            form.update(client_id=self.config.client_id, client_secret=secret)
        else:
            form["client_id"] = self.config.client_id
        try:
            answer = await self.guard.post_form(found.token_endpoint, form, headers=headers, max_bytes=MAX_DOCUMENT)
        except OutboundRefused as exc:
            raise UpstreamError(f"the token endpoint could not be reached: {exc}") from None
        if answer.status != 200:
            try:
                error = json.loads(answer.body).get("error")
            except (ValueError, AttributeError, UnicodeError, RecursionError):
                error = None
            raise UpstreamError(f"the token endpoint refused the code (HTTP {answer.status}"
                                f"{', ' + str(error)[:60] if isinstance(error, str) else ''})")
        tokens = _json(answer, "the token response")
        if not isinstance(tokens.get("id_token"), str):
            raise UpstreamError("the token response has no ID token (is openid among the scopes?)")
        return tokens

    async def identity(self, found: Discovered, tokens: dict[str, Any], flow: Flow) -> Identity:
        claims = await self.verified_id_token(found, tokens["id_token"], flow.nonce)
        access = tokens.get("access_token")
        if found.userinfo_endpoint and isinstance(access, str) and access:
            info = await self.userinfo(found, access)
            if info.get("sub") != claims["sub"]:  # OpenID Connect Core §5.3.2: else it is someone else's
                raise UpstreamError("the UserInfo response is about another subject")
            claims = {**info, **claims}  # the signed claims win
        self.admit(claims)
        # Text the person may have typed at the provider: control characters (NUL, which PostgreSQL refuses, bidi
        # and line breaks) go; an address the provider itself marks unverified is not kept (nor shown as theirs).
        email = _text(claims.get("email"), 254, cut=False) if claims.get("email_verified") not in (False, "false") \
            else None
        name = next((text for k in ("name", "preferred_username", "given_name")
                     if (text := _text(claims.get(k), 120))), None)
        return Identity(provider=self.id, issuer=found.issuer, subject=claims["sub"], name=name, email=email,
                        email_verified=_verified(claims))

    async def verified_id_token(self, found: Discovered, id_token: str, nonce: str) -> dict[str, Any]:
        keys = await self.keys(found)
        try:
            try:
                token = jwt.decode(id_token, keys, algorithms=list(found.algorithms))
            except InvalidKeyIdError:  # signed with a key published since: the provider rotated
                token = jwt.decode(id_token, await self.keys(found, refetch=True), algorithms=list(found.algorithms))
            claims = token.claims
            JWTClaimsRegistry(
                leeway=LEEWAY, iss={"essential": True, "value": found.issuer},
                sub={"essential": True}, aud={"essential": True, "value": self.config.client_id},
                exp={"essential": True}, iat={"essential": True}, nonce={"essential": True, "value": nonce},
            ).validate(claims)
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise UpstreamError(f"the ID token was refused: {type(exc).__name__}: {str(exc)[:160]}") from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        # OpenID Connect Core §3.1.3.7: azp, when present (and it must be with several audiences), is us.
        if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != self.config.client_id:
            raise UpstreamError("the ID token was issued to another authorized party (azp)")
        if (not isinstance(claims["sub"], str) or not 0 < len(claims["sub"]) <= 255
                or any(unicodedata.category(c) in _UNPRINTABLE for c in claims["sub"])):
            raise UpstreamError("the ID token's sub is not a string of 1 to 255 printable characters")
        return claims

    async def userinfo(self, found: Discovered, access_token: str) -> dict[str, Any]:
        try:
            fetched = await self.guard.fetch(found.userinfo_endpoint or "", max_bytes=MAX_DOCUMENT, headers={
                "authorization": f"Bearer {access_token}", "accept": "application/json"})
        except OutboundRefused as exc:
            raise UpstreamError(f"the UserInfo endpoint could not be reached: {exc}") from None
        if fetched.headers.get("content-type", "").split(";")[0].strip() == "application/jwt":
            raise UpstreamError("the UserInfo response is a signed JWT, which this server does not read")
        return _json(fetched, "the UserInfo response")

    def admit(self, claims: dict[str, Any]) -> None:
        """This deployment's rule over who may sign in with the provider (NotAllowed otherwise)."""
        if self.config.email_domains:
            email = claims.get("email")
            domain = email.rpartition("@")[2].lower() if isinstance(email, str) and "@" in email else None
            if domain is None or not _verified(claims) or domain not in self.config.email_domains:
                raise NotAllowed(f"Only verified e-mail addresses at {', '.join(self.config.email_domains)} may "
                                 f"sign in with {self.name}.")
        for claim, allowed in self.config.required_claims:
            value = claims.get(claim)
            values = value if isinstance(value, list) else [value]
            if not any(isinstance(v, str | int) and str(v) in allowed for v in values):
                raise NotAllowed(f"Your {self.name} account is not among those this service admits.")


_UNPRINTABLE = ("Cc", "Cf", "Cs")  # controls (NUL included), format (bidi overrides), lone surrogates


def _text(value: object, limit: int, *, cut: bool = True) -> str | None:
    """A claim as text to keep: unprintable characters dropped; longer than ``limit``, cut (a name) or dropped
    (an address: cut, it could name a domain nobody verified)."""
    if not isinstance(value, str):
        return None
    cleaned = "".join(c for c in value if unicodedata.category(c) not in _UNPRINTABLE).strip()
    if len(cleaned) > limit and not cut:
        return None
    return cleaned[:limit] or None


def _verified(claims: dict[str, Any]) -> bool:
    # Some providers send the string "true" (AWS Cognito did).
    return claims.get("email_verified") in (True, "true")


def _pairs(body: str) -> list[tuple[str, str]]:
    return parse_qsl(body, keep_blank_values=True)


def _form_encode(value: str) -> str:
    # RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined for Basic.
    return quote_plus(value)
