"""The built-in authorization server's settings: deleted with it. Their names predate the split (``APP_``
prefix, no part name in between) and stay as deployments spell them."""

from __future__ import annotations

import re
from typing import Annotated, ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource

from app.authserver.upstream_config import SECRET_VARIABLE, OidcProvider, parse_providers, with_secrets
from app.limits.checks import parse_rate
from app.settings import SettingsPart, comma_list

SECRETS_FOUND = "oidc client secrets found"


class AuthServerSettings(SettingsPart):
    # The JWKS (JSON, private keys) that signs access tokens; the first key signs, all are published.
    oauth_signing_keys: str | None = None
    oauth_access_token_ttl: int = Field(default=600, ge=300, le=900)
    oauth_refresh_token_ttl: int = Field(default=30 * 24 * 3600, ge=3600)
    oauth_refresh_grace: int = Field(default=60, ge=0, le=300)
    oauth_code_ttl: int = Field(default=60, ge=10, le=600)
    # Seconds a worker trusts what it read of a grant (not revoked, its account enabled) before it reads again:
    # the bound within which a revocation made elsewhere reaches it without Redis, or with a message lost. With
    # APP_REDIS_URL revocations are pushed to every process at once; the process that revokes sees it at once
    # always. 0: the grant is read on every call.
    oauth_grant_cache_ttl: float = Field(default=5, ge=0, le=60)
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
    # POST /register: per address (an IPv6 address by its /64), per network (IPv4 /24, IPv6 /48: a handful of
    # addresses cannot take the total between them) and all together.
    limit_registrations_per_address: str = "60/hour"
    limit_registrations_per_network: str = "100/hour"
    limit_registrations_total: str = "1000/hour"
    # Seconds a self-registered (DCR) client lives while no one has linked through it; the first grant keeps it.
    oauth_dcr_unused_ttl: int = Field(default=24 * 3600, ge=3600, le=30 * 24 * 3600)
    # Upstream OpenID Connect providers the login page offers ("Continue with <name>"): a JSON list
    # (app/authserver/upstream_config.py, docs/oauth.md). A secret may come from APP_OIDC_<ID>_CLIENT_SECRET.
    oidc_providers: Annotated[tuple[OidcProvider, ...], NoDecode] = ()
    # false: the login page has no password form (accounts sign in through the providers only).
    password_login: bool = True
    # APP_OIDC_<ID>_CLIENT_SECRET variables found (environment over .env), by the source below: not a setting.
    # The alias is a name no environment variable has: only the source below fills it (a dict field is otherwise
    # merged from every source, APP_OIDC_CLIENT_SECRETS included).
    oidc_client_secrets: dict[str, str] = Field(default_factory=dict, repr=False, exclude=True,
                                                validation_alias=SECRETS_FOUND)

    renamed: ClassVar[dict[str, str]] = {
        "APP_OAUTH_REGISTRATIONS_PER_HOUR": "APP_LIMIT_REGISTRATIONS_PER_ADDRESS (a rate, e.g. 20/hour)"}
    secrets: ClassVar[tuple[str, ...]] = ("oauth_signing_keys", "demo_password", "oidc_providers",
                                          "oidc_client_secrets")
    also_reads: ClassVar[tuple[re.Pattern[str], ...]] = (SECRET_VARIABLE,)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _ProviderSecrets(settings_cls, env_settings, dotenv_settings), env_settings,
                dotenv_settings, file_secret_settings)

    @field_validator("oidc_providers", mode="before")
    @classmethod
    def _providers(cls, value: object) -> object:
        return parse_providers(value)

    @model_validator(mode="after")
    def _sign_in_possible(self) -> AuthServerSettings:
        if not self.password_login and not self.oidc_providers:
            raise ValueError("APP_PASSWORD_LOGIN=false needs APP_OIDC_PROVIDERS: nobody could sign in")
        object.__setattr__(self, "oidc_providers", with_secrets(self.oidc_providers, self.oidc_client_secrets))
        return self

    @field_validator("oauth_cimd_hosts", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("limit_login_per_name", "limit_login_per_address", "limit_login_per_account",
                     "limit_registrations_per_address", "limit_registrations_per_network", "limit_registrations_total")
    @classmethod
    def _rate(cls, value: str) -> str:
        parse_rate(value)
        return value


class _ProviderSecrets(PydanticBaseSettingsSource):
    """The providers' secrets named apart (``APP_OIDC_<ID>_CLIENT_SECRET``, a name per provider, which no field
    can declare), read from what the environment and ``.env`` sources loaded: the environment wins."""

    def __init__(self, settings_cls: type[BaseSettings], env: PydanticBaseSettingsSource,
                 dotenv: PydanticBaseSettingsSource) -> None:
        super().__init__(settings_cls)
        self.sources = (dotenv, env)

    def get_field_value(self, field: object, field_name: str) -> tuple[object, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, object]:
        found: dict[str, str] = {}
        for source in self.sources:
            for name, value in (getattr(source, "env_vars", None) or {}).items():
                if SECRET_VARIABLE.fullmatch(name.upper()) and value:
                    found[name.upper()] = value
        return {SECRETS_FOUND: found}
