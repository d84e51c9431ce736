"""An identity provider reduced to what a resource server sees of it: its JWKS on loopback, and
the tokens it signs (external IdP mode: tests/e2e/test_external_idp.py, the fork test)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

SUBJECT = "idp-user-1"
NAME = "Ada Lovelace"
EMAIL = "ada@idp.example"
USERNAME = "ada"


def new_key() -> RSAKey:
    return RSAKey.generate_key(2048, private=True)


@dataclass
class FakeIdp:
    """An identity provider reduced to what a resource server sees of it: its JWKS, and the
    tokens it signs."""

    base_url: str = ""
    kid: str = "idp-key-1"
    key: RSAKey = field(default_factory=new_key)
    # time.monotonic() of each JWKS request
    jwks_requests: list[float] = field(default_factory=list)

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/jwks.json"

    @property
    def host_port(self) -> str:
        return self.base_url.removeprefix("http://")

    def app(self) -> Starlette:
        async def jwks(_: Request) -> JSONResponse:
            self.jwks_requests.append(time.monotonic())
            return JSONResponse({"keys": [{**self.key.as_dict(private=False), "kid": self.kid,
                                           "alg": "RS256", "use": "sig"}]})

        return Starlette(routes=[Route("/jwks.json", jwks)])

    def rotate(self) -> None:
        """Switch to a new signing key under a new kid; the old key is no longer published."""
        number = int(self.kid.rsplit("-", 1)[1]) + 1
        self.kid, self.key = f"idp-key-{number}", new_key()

    def sign(self, audience: str, *, key: RSAKey | None = None, kid: str | None = None,
             **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": self.base_url, "aud": audience, "sub": SUBJECT, "scope": "recipes.write",
                   "name": NAME, "email": EMAIL, "preferred_username": USERNAME, "iat": now,
                   "exp": now + 300, **claims}
        return jwt.encode({"alg": "RS256", "kid": kid or self.kid, "typ": "JWT"}, payload,
                          key or self.key)
