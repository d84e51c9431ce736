"""securitySchemes: what a tool accepts, declared once per tool, published and enforced
(docs/chatgpt-contract.md §5).

A tool lists alternatives: the call is admitted if ANY scheme admits it. ``noauth``
admits everyone; ``oauth2`` admits a token that carries ALL of its scopes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.provider import AccessToken

Scheme = dict[str, Any]
NOAUTH: Scheme = {"type": "noauth"}
# RFC 6750 §3: scope tokens are %x21 / %x23-5B / %x5D-7E; error_description adds the space.
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")


def oauth2(*scopes: str) -> Scheme:
    return {"type": "oauth2", "scopes": list(scopes)}


def validate(security: Sequence[Scheme]) -> list[Scheme]:
    """A normalised copy, or ValueError naming what is wrong."""
    if not security:
        raise ValueError("declare at least one security scheme (NOAUTH or oauth2(...))")
    schemes: list[Scheme] = []
    for scheme in security:
        kind = scheme.get("type")
        if kind == "noauth":
            schemes.append(dict(NOAUTH))
        elif kind == "oauth2":
            scopes = scheme.get("scopes", [])
            if not isinstance(scopes, list | tuple) or not all(isinstance(s, str) and _SCOPE_TOKEN.fullmatch(s)
                                                                for s in scopes):
                raise ValueError(f"oauth2 scopes must be a list of scope names (printable ASCII, no spaces, quotes "
                                 f"or backslashes), not {scopes!r}")
            schemes.append(oauth2(*scopes))
        else:
            raise ValueError(f"unknown security scheme type {kind!r} (expected 'noauth' or 'oauth2')")
    return schemes


def unmet_scopes(security: Sequence[Scheme], token: AccessToken | None) -> tuple[str, ...] | None:
    """None when a scheme admits the caller; otherwise the scopes to ask the user for.

    With several oauth2 alternatives the first one is asked for: it is the tool's
    primary requirement, in declaration order.
    """
    granted = set(token.scopes) if token is not None else set()
    wanted: tuple[str, ...] | None = None
    for scheme in security:
        if scheme["type"] == "noauth":
            return None
        scopes = tuple(scheme.get("scopes", ()))
        if token is not None and granted.issuperset(scopes):
            return None
        if wanted is None:
            wanted = scopes
    return wanted or ()


@dataclass(frozen=True, slots=True)
class Access:
    """What a tool's schemes ask of a caller, and the answer for one caller: checked once per call."""

    tool: str
    title: str  # the tool's title: what a refusal names
    unmet: tuple[str, ...] | None  # the scopes to ask the user for; None: admitted

    @classmethod
    def check(cls, tool: str, title: str, security: Sequence[Scheme], token: AccessToken | None) -> Access:
        return cls(tool, title, unmet_scopes(security, token))


def refusal_description(title: str, scopes: Sequence[str], *, signed_in: bool) -> str:
    """What a refused call's challenge says (error_description), in the result and at HTTP level alike."""
    if signed_in:
        return f"{title} needs more access to the linked account ({' '.join(scopes)})."
    return f"Sign in to use {title}."


def challenge(resource_metadata_url: str, scopes: Sequence[str], description: str | None,
              error: str | None = "insufficient_scope") -> str:
    """An RFC 6750 / RFC 7235 Bearer challenge (``WWW-Authenticate`` value); ``error`` None: none, as for a
    request that sent no token (RFC 6750 §3.1)."""
    params = [f'resource_metadata="{_ascii(resource_metadata_url)}"']
    if scopes:
        params.append(f'scope="{" ".join(scopes)}"')  # validated scope tokens (validate())
    if error is not None:
        params.append(f'error="{error}"')
        if description:
            params.append(f'error_description="{_ascii(description)}"')
    return "Bearer " + ", ".join(params)


def _ascii(value: str) -> str:
    """Fit text to RFC 6750's attribute value set: printable ASCII without ``"`` or ``\\``.

    Accents are dropped (café -> cafe), quotes become apostrophes, anything else a space.
    """
    plain = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode()
    plain = plain.replace('"', "'").replace("\\", "/")
    return "".join(ch if " " <= ch <= "~" else " " for ch in plain)
