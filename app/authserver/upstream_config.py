"""``APP_OIDC_PROVIDERS``: the upstream OpenID Connect providers people may sign in with.

A JSON list of objects::

    [{"id": "corp", "name": "Corp SSO", "issuer": "https://login.corp.example",
      "client_id": "...", "client_secret": "...", "scopes": ["openid", "email", "profile"],
      "email_domains": ["corp.example"], "required_claims": {"tid": ["..."]}}]

``id`` names the callback (``{APP_BASE_URL}/login/<id>/callback``, registered at the provider) and the variable a
secret may come from instead (``APP_OIDC_<ID>_CLIENT_SECRET``, ``-`` read as ``_``). Without any secret the client
is public (PKCE only, ``token_endpoint_auth_method=none``). ``email_domains``: only a verified e-mail address at
one of these domains may sign in; ``required_claims``: each claim must hold one of the listed values (a list claim,
such as groups, one of them). Every mistake is one line naming the entry.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
_DOMAIN = re.compile(r"(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+")
_CLAIM = re.compile(r"[A-Za-z0-9_:./-]{1,64}")
_KEYS = {"id", "name", "issuer", "client_id", "client_secret", "scopes", "email_domains", "required_claims"}
DEFAULT_SCOPES = ("openid", "email", "profile")
SECRET_VARIABLE = re.compile(r"APP_OIDC_[A-Z0-9_]{1,32}_CLIENT_SECRET")


@dataclass(frozen=True)
class OidcProvider:
    id: str
    name: str
    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = DEFAULT_SCOPES
    email_domains: tuple[str, ...] = ()
    required_claims: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def secret_variable(self) -> str:
        return f"APP_OIDC_{self.id.upper().replace('-', '_')}_CLIENT_SECRET"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_providers(value: object) -> tuple[OidcProvider, ...]:
    """The providers of the JSON text (or an already-built tuple); ValueError naming the entry that is wrong."""
    if isinstance(value, tuple) and all(isinstance(v, OidcProvider) for v in value):
        return value
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON ({exc.msg} at character {exc.pos}): a list of provider objects") from None
    if not isinstance(value, list):
        raise ValueError("must be a JSON list of provider objects")
    providers = [_provider(i, entry) for i, entry in enumerate(value, 1)]
    ids = [p.id for p in providers]
    if duplicated := sorted({i for i in ids if ids.count(i) > 1}):
        raise ValueError(f"the id {duplicated[0]!r} is used twice")
    return tuple(providers)


def _provider(index: int, entry: object) -> OidcProvider:
    where = f"entry {index}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: an object with id, name, issuer and client_id")
    if isinstance(entry.get("id"), str) and _ID.fullmatch(entry["id"]):
        where = f"entry {index} ({entry['id']})"
    if unknown := sorted(set(entry) - _KEYS):
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    for key in ("id", "name", "issuer", "client_id"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ValueError(f"{where}: {key} must be a non-empty string")
    if not _ID.fullmatch(entry["id"]):
        raise ValueError(f"{where}: id must be 1-32 lower-case letters, digits or '-', starting with a letter or digit")
    if len(entry["name"]) > 60:
        raise ValueError(f"{where}: name is at most 60 characters")
    # Kept as written, trailing slash and all: the ID token's iss must equal it byte for byte (Auth0's ends in /).
    issuer = entry["issuer"].strip()
    parts = urlsplit(issuer)
    # Discovery (OpenID Connect Discovery 1.0 §4.3): the issuer is https, without query or fragment; http only
    # on loopback (a provider run beside the server, as the tests do).
    if parts.query or parts.fragment or not parts.hostname or not (
            parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname))):
        raise ValueError(f"{where}: issuer must be an https URL without query or fragment (http only on loopback)")
    secret = entry.get("client_secret")
    if secret is not None and (not isinstance(secret, str) or not secret):
        raise ValueError(f"{where}: client_secret must be a non-empty string (or absent)")
    scopes = entry.get("scopes", list(DEFAULT_SCOPES))
    if not isinstance(scopes, list) or not all(isinstance(s, str) and s and " " not in s for s in scopes):
        raise ValueError(f"{where}: scopes must be a list of scope names")
    if "openid" not in scopes:
        raise ValueError(f"{where}: scopes must include openid")
    domains = entry.get("email_domains", [])
    if not isinstance(domains, list) or not all(isinstance(d, str) and _DOMAIN.fullmatch(d.lower()) for d in domains):
        raise ValueError(f"{where}: email_domains must be a list of domain names")
    claims = entry.get("required_claims", {})
    if not isinstance(claims, dict) or not all(
            _CLAIM.fullmatch(name) and isinstance(values, list) and values
            and all(isinstance(v, str) and v for v in values) for name, values in claims.items()):
        raise ValueError(f"{where}: required_claims must map claim names to non-empty lists of strings")
    return OidcProvider(id=entry["id"], name=entry["name"].strip(), issuer=issuer, client_id=entry["client_id"],
                        client_secret=secret, scopes=tuple(dict.fromkeys(scopes)),
                        email_domains=tuple(d.lower() for d in domains),
                        required_claims=tuple((name, tuple(values)) for name, values in sorted(claims.items())))


def with_secrets(providers: tuple[OidcProvider, ...], variables: Mapping[str, str]) -> tuple[OidcProvider, ...]:
    """Each provider's secret from its ``APP_OIDC_<ID>_CLIENT_SECRET`` in ``variables`` when set there (it
    wins over the JSON's ``client_secret``, as a variable wins over its file)."""
    return tuple(replace(p, client_secret=variables[p.secret_variable]) if variables.get(p.secret_variable) else p
                 for p in providers)
