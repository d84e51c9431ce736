"""OAuth clients, from the three registration paths ChatGPT tries in order:

1. CIMD: the ``client_id`` is an https URL whose JSON document describes the client. It is
   fetched through the outbound guard, only from ``APP_OAUTH_CIMD_HOSTS``, must name its own
   URL as ``client_id``, and is cached (in the database, shared by workers) per its HTTP
   caching headers.
2. DCR (RFC 7591): open registration, limited per address, per network and in all (``app.limits``), a
   document of at most ``MAX_REGISTRATION_BYTES``. A client no one has linked through is deleted
   ``ServerConfig.dcr_unused_ttl`` after it registered (24 hours); the first grant made through it keeps it
   for good (ChatGPT links again through the client it registered: one someone linked with never expires).
3. Pre-registered: ``python -m app clients create``.
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import ipaddress
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import structlog
from authlib.oauth2.rfc6749 import ClientMixin
from joserfc.errors import JoseError
from joserfc.jwk import KeySet, KeySetSerialization
from sqlalchemy import delete, update
from sqlalchemy.orm import Session

from app.auth.scopes import ScopeCatalog
from app.authserver.forms import json_document, storable
from app.authserver.models import OAuthClient
from app.db import Database, UnitOfWork
from app.db.upsert import upsert
from app.net import OutboundGuard, OutboundRefused

log = structlog.get_logger(__name__)

AUTH_METHODS = ("none", "private_key_jwt", "client_secret_basic", "client_secret_post")
CIMD_AUTH_METHODS = ("none", "private_key_jwt")  # a public document cannot hold a secret
GRANT_TYPES = ("authorization_code", "refresh_token")
CIMD_MIN_TTL, CIMD_DEFAULT_TTL, CIMD_MAX_TTL = 60, 3600, 24 * 3600
CIMD_MAX_BYTES = 64 * 1024
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_CHARS = 2048
# A registration document: ChatGPT's is about 300 bytes, one with an inline JWKS of a few keys about 3 KB.
MAX_REGISTRATION_BYTES = 16 * 1024
MAX_METADATA_MEMBERS = 40
MAX_SCOPE_CHARS = 1000
MAX_JWKS_KEYS = 10
PRIVATE_KEY_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-maxage|max-age)\s*=\s*\"?(\d+)", re.I)


class ClientMetadataError(ValueError):
    """Client metadata that cannot be accepted; the message is for the client developer (RFC 7591 §3.2.2)."""

    def __init__(self, message: str, error: str = "invalid_client_metadata") -> None:
        super().__init__(message)
        self.error = error


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass
class Client(ClientMixin):
    """What authlib asks of a client, over a row read in the current unit of work."""

    client_id: str
    kind: str
    client_name: str | None
    redirect_uris: list[str]
    grant_types: list[str]
    token_endpoint_auth_method: str
    scope: str | None
    jwks_uri: str | None
    jwks: dict[str, Any] | None
    client_secret_hash: str | None = field(repr=False)

    @classmethod
    def from_row(cls, row: OAuthClient) -> Client:
        return cls(row.client_id, row.kind, row.client_name, list(row.redirect_uris), list(row.grant_types),
                   row.token_endpoint_auth_method, row.scope, row.jwks_uri, row.jwks, row.client_secret_hash)

    def get_client_id(self) -> str:
        return self.client_id

    # None: authlib asks for redirect_uri then (its stub promises a str).
    def get_default_redirect_uri(  # pyright: ignore[reportIncompatibleMethodOverride] (see above)
            self) -> str | None:
        # OAuth 2.1: with one registered URI the parameter may be omitted; with several it is required.
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    # authlib passes the request's scope parameter, None if absent (its stub: str or a collection).
    def get_allowed_scope(  # pyright: ignore[reportIncompatibleMethodOverride] (see above)
            self, scope: str | None) -> str:
        # Unknown scopes were dropped earlier (server). An operator's client keeps to the scope it was registered
        # with; one that registered itself (DCR) or publishes its document (CIMD) may ask for any scope the server
        # has, the person deciding on the consent page: the SDK's client registers with the scope of the first
        # challenge it meets (SEP-835), and must still be able to step up when a tool needs more.
        requested = (scope or "").split()
        if self.scope is None or self.kind in ("dcr", "cimd"):
            return " ".join(requested)
        allowed = set(self.scope.split())
        return " ".join(s for s in requested if s in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return redirect_uri in self.redirect_uris  # exact string match, no prefix or pattern

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret_hash is not None and hmac.compare_digest(digest(client_secret),
                                                                           self.client_secret_hash)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types

    @property
    def display_name(self) -> str:
        return self.client_name or urlsplit(self.redirect_uris[0]).hostname or self.client_id

    @property
    def display_host(self) -> str:
        # The host a browser would go to (never user information before it: a row older than that rule may hold
        # some), in its ASCII form.
        try:
            parts = urlsplit(self.redirect_uris[0]) if self.redirect_uris else None
            host, port = (parts.hostname or "", parts.port) if parts else ("", None)
        except ValueError:
            return ""
        return f"{host}:{port}" if port else host


class ClientRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, client_id: str) -> OAuthClient | None:
        """The client, unless it is a self-registered one past its unused lifetime (deleted at the next sweep). An id
        no database can hold as text (a NUL, an unpaired surrogate: from a Basic header or an assertion's ``sub``)
        names no client, and is not sent to the database (PostgreSQL would raise)."""
        if not storable(client_id):
            return None
        row = self.session.get(OAuthClient, client_id)
        if row is not None and row.kind == "dcr" and row.expires_at is not None and row.expires_at < time.time():
            return None
        return row

    def linked(self, client_id: str) -> None:
        """A grant was made through the client: a self-registered one no longer expires."""
        self.session.execute(update(OAuthClient).where(
            OAuthClient.client_id == client_id, OAuthClient.kind == "dcr", OAuthClient.expires_at.is_not(None))
            .values(expires_at=None))

    def hold_until(self, client_id: str, when: int) -> None:
        """A code was issued to the client: a self-registered one unlinked so far lives at least until ``when``,
        so that the code can be redeemed."""
        self.session.execute(update(OAuthClient).where(
            OAuthClient.client_id == client_id, OAuthClient.kind == "dcr", OAuthClient.expires_at < when)
            .values(expires_at=when))

    def sweep_unused(self) -> int:
        """Delete the self-registered clients past their unused lifetime (none has a grant: the first clears it)."""
        result = self.session.execute(delete(OAuthClient).where(
            OAuthClient.kind == "dcr", OAuthClient.expires_at < int(time.time())))
        return int(getattr(result, "rowcount", 0) or 0)

    def add(self, row: OAuthClient) -> None:
        self.session.add(row)
        self.session.flush()

    def expire_at(self, client_id: str, when: int) -> None:
        self.session.execute(update(OAuthClient).where(OAuthClient.client_id == client_id).values(expires_at=when))

    def put(self, values: dict[str, Any]) -> None:
        upsert(self.session, OAuthClient.__table__, [values], key=("client_id",))


def _loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _https_or_loopback(url: Any) -> bool:
    try:
        parts = urlsplit(url) if isinstance(url, str) and len(url) <= 2048 else None
    except ValueError:
        return False
    if parts is None or not parts.netloc or "@" in parts.netloc:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and _loopback(parts.hostname))


def validate_redirect_uris(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_REDIRECT_URIS:
        raise ClientMetadataError(f"redirect_uris: a list of 1 to {MAX_REDIRECT_URIS} URIs", "invalid_redirect_uri")
    for uri in value:
        if isinstance(uri, str) and len(uri) > MAX_REDIRECT_URI_CHARS:
            raise ClientMetadataError(f"redirect_uris: each at most {MAX_REDIRECT_URI_CHARS} characters",
                                      "invalid_redirect_uri")
        try:
            parts = urlsplit(uri) if isinstance(uri, str) else None
            host = parts.hostname if parts else None
            port = parts.port if parts else None  # raises for one out of range or not a number
        except ValueError:  # e.g. an unclosed IPv6 bracket, port 99999
            parts = host = port = None
        if parts is None or port == 0 or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in uri) or not parts.netloc \
                or parts.fragment or (
                parts.scheme != "https" and not (parts.scheme == "http" and _loopback(host))):
            raise ClientMetadataError(f"redirect_uris: {str(uri)[:200]!r} is not an absolute https URI without a "
                                      f"fragment, spaces or control characters, with a valid port if any (http only "
                                      f"on loopback)", "invalid_redirect_uri")
        if "\\" in uri or "%" in parts.netloc or not parts.netloc.isascii():
            # A backslash browsers read as a slash, an encoded or look-alike (non-ASCII) host: each can show one
            # host on the consent page and send the code to another. IDNs go in their ASCII (xn--) form.
            raise ClientMetadataError(f"redirect_uris: {str(uri)[:200]!r}: write the host in plain ASCII (an IDN "
                                      "as xn--), without backslashes or %-escapes", "invalid_redirect_uri")
        if "@" in parts.netloc:
            # https://chatgpt.com@evil.example/cb goes to evil.example, yet reads as chatgpt.com on the pages.
            raise ClientMetadataError(f"redirect_uris: {str(uri)[:200]!r} has user information before its host "
                                      "(user@host): name the host alone", "invalid_redirect_uri")
    return list(dict.fromkeys(value))


def validate_metadata(data: Any, catalog: ScopeCatalog, *, auth_methods: tuple[str, ...],
                      default_auth: str) -> dict[str, Any]:
    """The subset of RFC 7591 metadata we keep, normalised; unknown scopes are dropped, not refused."""
    if not isinstance(data, dict):
        raise ClientMetadataError("the client metadata must be a JSON object")
    if len(data) > MAX_METADATA_MEMBERS:
        raise ClientMetadataError(f"the client metadata has {len(data)} members; at most {MAX_METADATA_MEMBERS}")
    redirect_uris = validate_redirect_uris(data.get("redirect_uris"))
    method = data.get("token_endpoint_auth_method", default_auth)
    if method not in auth_methods:
        raise ClientMetadataError(f"token_endpoint_auth_method: one of {', '.join(auth_methods)}")
    grant_types = data.get("grant_types", ["authorization_code", "refresh_token"])
    if (not isinstance(grant_types, list) or not all(isinstance(g, str) for g in grant_types)
            or "authorization_code" not in grant_types or not set(grant_types) <= set(GRANT_TYPES)):
        raise ClientMetadataError("grant_types: authorization_code, optionally refresh_token")
    if "\\u0000" in json.dumps(data):
        raise ClientMetadataError("the client metadata contains a NUL character")
    if data.get("response_types", ["code"]) != ["code"]:
        raise ClientMetadataError("response_types: only [\"code\"] is supported")
    name = data.get("client_name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 200):
        raise ClientMetadataError("client_name: a string of at most 200 characters")
    scope = data.get("scope")
    if scope is not None and (not isinstance(scope, str) or len(scope) > MAX_SCOPE_CHARS):
        raise ClientMetadataError(f"scope: a space-separated string of at most {MAX_SCOPE_CHARS} characters")
    jwks_uri, jwks = data.get("jwks_uri"), data.get("jwks")
    if jwks_uri is not None and jwks is not None:
        raise ClientMetadataError("jwks_uri and jwks are mutually exclusive")
    if jwks_uri is not None and not _https_or_loopback(jwks_uri):
        raise ClientMetadataError("jwks_uri: an https URL (http only on loopback)")
    if jwks is not None:
        if isinstance(jwks, dict) and isinstance(jwks.get("keys"), list) and len(jwks["keys"]) > MAX_JWKS_KEYS:
            raise ClientMetadataError(f"jwks: at most {MAX_JWKS_KEYS} keys")
        if isinstance(jwks, dict) and isinstance(jwks.get("keys"), list) and any(
                isinstance(key, dict) and PRIVATE_KEY_MEMBERS & key.keys() for key in jwks["keys"]):
            # A private (or symmetric) key published in a registration is no longer private: refused, not stored.
            raise ClientMetadataError("jwks: public keys only (no d, p, q, dp, dq, qi, oth or k members)")
        try:
            # A parsed document, shape unknown: joserfc checks it as it imports (what it raises is
            # caught).
            KeySet.import_key_set(cast(KeySetSerialization, jwks))
        except (JoseError, ValueError, TypeError, KeyError):
            raise ClientMetadataError("jwks: not a JSON Web Key Set") from None
    if method == "private_key_jwt" and jwks_uri is None and jwks is None:
        raise ClientMetadataError("private_key_jwt needs jwks_uri or jwks")
    return {
        "redirect_uris": redirect_uris,
        "token_endpoint_auth_method": method,
        "grant_types": list(dict.fromkeys(grant_types)),
        "client_name": name.strip() if isinstance(name, str) else None,
        # Only unknown scopes asked for ("openid profile"): no restriction rather than no scope at all.
        "scope": " ".join(catalog.known(scope.split())) or None if isinstance(scope, str) else None,
        "jwks_uri": jwks_uri,
        "jwks": jwks,
    }


def register_client(uow: UnitOfWork, metadata: dict[str, Any], *, kind: str, unused_ttl: int | None = None
                    ) -> tuple[OAuthClient, str | None]:
    """Store a DCR or pre-registered client; returns it and its secret (shown once, stored hashed).
    ``unused_ttl`` (DCR): seconds it lives unless a grant is made through it (``ClientRepository.linked``)."""
    secret = None
    if metadata["token_endpoint_auth_method"] in ("client_secret_basic", "client_secret_post"):
        secret = "cs_" + secrets.token_urlsafe(32)  # the prefix: recognised by the log's scrubber and by scanners
    now = int(time.time())
    row = OAuthClient(client_id=("dcr_" if kind == "dcr" else "cli_") + secrets.token_urlsafe(18), kind=kind,
                      client_secret_hash=digest(secret) if secret else None, created_at=now,
                      expires_at=now + unused_ttl if unused_ttl is not None else None, **metadata)
    uow.repository(ClientRepository).add(row)
    return row, secret


def registration_response(row: OAuthClient, secret: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "client_id": row.client_id,
        "client_id_issued_at": row.created_at,
        "redirect_uris": row.redirect_uris,
        "grant_types": row.grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": row.token_endpoint_auth_method,
    }
    for name in ("client_name", "scope", "jwks_uri", "jwks"):
        if getattr(row, name) is not None:
            body[name] = getattr(row, name)
    if secret is not None:
        body["client_secret"] = secret
        body["client_secret_expires_at"] = 0  # never
    return body


def cache_lifetime(headers: dict[str, str], now: float) -> int:
    """Seconds to keep a client document, from Cache-Control / Expires, within [1 min, 24 h]."""
    control = headers.get("cache-control", "")
    if re.search(r"(?:^|,)\s*(?:no-store|no-cache)\b", control, re.I):
        return CIMD_MIN_TTL  # refetched at the next authorization after a minute, not on every request
    if match := _MAX_AGE.search(control):
        age = headers.get("age", "").strip()
        ttl = int(match.group(1)[:9]) - (int(age[:9]) if age.isdigit() else 0)
    elif "expires" in headers:
        try:
            ttl = int(email.utils.parsedate_to_datetime(headers["expires"]).timestamp() - now)
        except (TypeError, ValueError):
            ttl = CIMD_MIN_TTL
    else:
        ttl = CIMD_DEFAULT_TTL
    return max(CIMD_MIN_TTL, min(CIMD_MAX_TTL, ttl))


class CimdResolver:
    """Makes sure the database holds a fresh copy of a CIMD client's document before authlib asks for it.

    The fetch happens here, on the event loop with the async guard, OUTSIDE the database
    transaction of the OAuth request: a slow document server must not hold SQLite's write lock.
    """

    def __init__(self, guard: OutboundGuard, db: Database, catalog: ScopeCatalog, hosts: list[str]) -> None:
        self.guard = guard
        self.db = db
        self.catalog = catalog
        self.hosts = {h.lower() for h in hosts}

    def is_document_url(self, client_id: str | None) -> bool:
        return bool(client_id) and client_id.startswith(("https://", "http://"))

    async def ensure(self, client_id: str) -> None:
        """Fetch and cache the document if it is missing or expired; raise ClientMetadataError if unusable."""
        now = time.time()
        cached = await self.db.read(lambda uow: _cache_state(uow.repository(ClientRepository).get(client_id)))
        if cached is not None and cached.kind == "cimd" and (cached.expires_at or 0) > now:
            return
        parts = urlsplit(client_id)
        if (parts.hostname or "").lower() not in self.hosts:
            raise ClientMetadataError(f"client metadata documents are accepted only from "
                                      f"{', '.join(sorted(self.hosts))}; not from {parts.hostname}", "invalid_client")
        if len(client_id) > 2048 or parts.fragment or parts.username or parts.password or parts.path in ("", "/"):
            raise ClientMetadataError("a client_id URL needs a path and no fragment or credentials", "invalid_client")
        try:
            fetched = await self.guard.fetch(client_id, headers={"accept": "application/json"},
                                             max_bytes=CIMD_MAX_BYTES)
            if fetched.status != 200:
                raise OutboundRefused(f"{parts.hostname} answered HTTP {fetched.status}")
            document = json_document(fetched.body)
        except (OutboundRefused, ValueError, RecursionError) as exc:
            if cached is not None and cached.kind == "cimd":
                log.warning("oauth.cimd_stale", client_id=client_id, error=str(exc))
                # The document server is down: the last good copy is better than no sign-in, and it is
                # tried again in a minute, not on every request.
                retry_at = int(now + CIMD_MIN_TTL)
                await self.db.write(lambda uow: uow.repository(ClientRepository).expire_at(client_id, retry_at))
                return
            raise ClientMetadataError(f"the client metadata document could not be fetched: {exc}",
                                      "invalid_client") from None
        if not isinstance(document, dict) or document.get("client_id") != client_id:
            raise ClientMetadataError("the client metadata document's client_id must equal its URL", "invalid_client")
        if "client_secret" in document or "client_secret_expires_at" in document:
            raise ClientMetadataError("a client metadata document cannot carry a client secret", "invalid_client")
        try:
            metadata = validate_metadata(document, self.catalog, auth_methods=CIMD_AUTH_METHODS, default_auth="none")
        except ClientMetadataError as exc:
            raise ClientMetadataError(f"client metadata document: {exc}", "invalid_client") from None
        values = {"client_id": client_id, "kind": "cimd", "client_secret_hash": None,
                  "created_at": int(cached.created_at if cached else now),
                  "expires_at": int(now + cache_lifetime(fetched.headers, now)), **metadata}
        await self.db.write(lambda uow: uow.repository(ClientRepository).put(values))
        log.info("oauth.cimd_fetched", client_id=client_id, ttl=values["expires_at"] - int(now))


@dataclass(frozen=True)
class _CacheState:
    kind: str
    created_at: int
    expires_at: int | None


def _cache_state(row: OAuthClient | None) -> _CacheState | None:
    return _CacheState(row.kind, row.created_at, row.expires_at) if row is not None else None


class ClientKeys:
    """Public keys of private_key_jwt clients: inline ``jwks`` or fetched from ``jwks_uri`` (guarded, cached)."""

    def __init__(self, guard: OutboundGuard, *, ttl: float = 600, min_refresh: float = 5) -> None:
        self.guard = guard
        self.ttl = ttl
        self.min_refresh = min_refresh
        self._cache: dict[str, tuple[float, KeySet]] = {}

    async def keys(self, client: Client, kid: str | None) -> KeySet | None:
        if client.jwks is not None:
            # Stored only once validate_metadata imported it: a key set.
            return KeySet.import_key_set(cast(KeySetSerialization, client.jwks))
        if client.jwks_uri is None:
            return None
        now = time.monotonic()
        cached = self._cache.get(client.jwks_uri)
        if cached is not None:
            age, key_set = now - cached[0], cached[1]
            known = kid is None or any(k.kid == kid for k in key_set)
            if age < self.ttl and (known or age < self.min_refresh):
                return key_set
        try:
            fetched = await self.guard.fetch(client.jwks_uri, headers={"accept": "application/json"})
            if fetched.status != 200:
                raise OutboundRefused(f"HTTP {fetched.status}")
            key_set = KeySet.import_key_set(json.loads(fetched.body))
        except (OutboundRefused, ValueError, JoseError, TypeError, KeyError, RecursionError) as exc:
            log.warning("oauth.client_jwks_unavailable", client_id=client.client_id, error=str(exc))
            return cached[1] if cached else None
        if len(self._cache) > 1000:
            self._cache.clear()
        self._cache[client.jwks_uri] = (now, key_set)
        return key_set
