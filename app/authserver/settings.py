"""The built-in authorization server's settings: deleted with it. Their names predate the split (``APP_``
prefix, no part name in between) and stay as deployments spell them."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from app.limits.checks import parse_rate
from app.settings import SettingsPart, comma_list


class AuthServerSettings(SettingsPart):
    # The JWKS (JSON, private keys) that signs access tokens; the first key signs, all are published.
    oauth_signing_keys: str | None = None
    oauth_access_token_ttl: int = Field(default=600, ge=300, le=900)
    oauth_refresh_token_ttl: int = Field(default=30 * 24 * 3600, ge=3600)
    oauth_refresh_grace: int = Field(default=60, ge=0, le=300)
    oauth_code_ttl: int = Field(default=60, ge=10, le=600)
    # Open client registration (RFC 7591 DCR, POST /register). The 2026-07-28 MCP spec prefers client metadata
    # documents (CIMD), which ChatGPT uses: false drops the endpoint and its metadata entry (docs/oauth.md).
    oauth_dcr: bool = True
    # Hosts whose client metadata documents (CIMD) are fetched: a client_id URL elsewhere is refused.
    oauth_cimd_hosts: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["chatgpt.com", "claude.ai"])
    # The demo accounts (alice, bob) made in development; production refuses to serve while they exist.
    demo_password: str = Field(default="demo-password", min_length=8)
    allow_demo_accounts: bool = False
    limit_login_per_name: str = "5/minute"
    limit_login_per_address: str = "20/minute"
    limit_login_per_account: str = "10/10 minutes"
    limit_registrations_per_address: str = "60/hour"
    limit_registrations_total: str = "1000/hour"

    renamed: ClassVar[dict[str, str]] = {
        "APP_OAUTH_REGISTRATIONS_PER_HOUR": "APP_LIMIT_REGISTRATIONS_PER_ADDRESS (a rate, e.g. 20/hour)"}
    secrets: ClassVar[tuple[str, ...]] = ("oauth_signing_keys", "demo_password")

    @field_validator("oauth_cimd_hosts", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("limit_login_per_name", "limit_login_per_address", "limit_login_per_account",
                     "limit_registrations_per_address", "limit_registrations_total")
    @classmethod
    def _rate(cls, value: str) -> str:
        parse_rate(value)
        return value
