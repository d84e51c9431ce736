"""Configuration, read once from the environment (prefix ``APP_``) and passed down.

Nothing here runs at import time: ``load_settings()`` is called by the CLI or by
``create_app_from_env`` and the result is handed to every component that needs it.
A bad value is reported as one line naming the variable, never as a traceback.
"""

from __future__ import annotations

import ipaddress
import os
import re
from functools import cached_property
from typing import Annotated, Any, ClassVar, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.limits.checks import parse_rate
from app.plain import plain_error

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("json", "console")
ENVIRONMENTS = ("development", "production")
SUPPORTED_DATABASES = "use sqlite:///path/to/app.db or postgresql+psycopg://user:password@host:5432/name"
AUTH_MODES = ("builtin", "external")
AUTH_CHALLENGES = ("auto", "meta", "http")
# What the speed-up package (app/tuning) may install, each on its own (APP_TUNING; docs/performance.md).
TUNING_PIECES = ("lane", "protocol", "threads", "route", "settle")
STORAGE_BACKENDS = ("local", "s3")
S3_ENCRYPTIONS = ("none", "AES256", "aws:kms")
# Settings that take one of a few values, accepted in any case.
CHOICES = {"log_level": LOG_LEVELS, "log_format": LOG_FORMATS, "env": ENVIRONMENTS, "auth_mode": AUTH_MODES,
           "storage_backend": STORAGE_BACKENDS, "s3_sse": S3_ENCRYPTIONS, "auth_challenge": AUTH_CHALLENGES}
ENV_PREFIX = "APP_"


def comma_list(value: object) -> object:
    """A comma-separated variable as its list (what NoDecode fields read); anything else as is."""
    if isinstance(value, str):
        return _comma_items(value)
    return value


def _comma_items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _choice(value: object, choices: tuple[str, ...]) -> str:
    """The choice ``value`` names, in any case, spelled as the choice is."""
    text = str(value).strip().lower()
    for choice in choices:
        if choice.lower() == text:
            return choice
    raise ValueError(f"must be one of {', '.join(choices)}")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore", frozen=True)
    # As a SettingsPart declares them (load_part reads both the same way): names that were renamed, and the
    # fields whose values an error line never repeats.
    renamed: ClassVar[dict[str, str]] = {"APP_MCP_FAST_LANE": "APP_TUNING"}
    secrets: ClassVar[tuple[str, ...]] = (
        "secret_key",
        "redis_url",
        "database_url",
        "request_state_keys",
    )

    base_url: str = "http://127.0.0.1:8000"
    # The brand: the MCP serverInfo name (a machine name) and title, and the OAuth metadata's resource_name.
    server_name: str = Field(default="chatgpt-app-server", pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")
    server_title: str = Field(default="ChatGPT App Server", min_length=1, max_length=100)
    # The token OpenAI's platform gives when the app is submitted, to verify that this domain is
    # yours: served at /.well-known/openai-apps-challenge (404 while unset). Public, not a secret.
    openai_apps_challenge: str | None = None
    # Who runs this server, as its privacy and terms pages (/privacy, /terms) name them: a person's
    # or a company's name (default: "the operator of" APP_SERVER_TITLE), an email address or URL
    # people write to, and the law the terms are governed by (left out while unset).
    operator_name: str | None = Field(default=None, min_length=1, max_length=200)
    operator_contact: str | None = Field(default=None, min_length=3, max_length=320)
    operator_jurisdiction: str | None = Field(default=None, min_length=2, max_length=200)
    # Your own privacy policy or terms instead of the generated pages: /privacy and /terms then
    # redirect there.
    privacy_url: str | None = None
    terms_url: str | None = None
    database_url: str = "sqlite:///./var/app.db"
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_format: str = "console"
    log_level: str = "info"
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    # Requests one worker serves at once, in all and from one client address, and the bodies over
    # 16 KiB they may bring between them, half of it from one client (app/http/inflight.py): past
    # any, 503 with Retry-After before the body is read. Sized to deploy/'s pod limit:
    # docs/lifecycle.md.
    max_requests_in_flight: int = Field(default=128, ge=1)
    max_requests_in_flight_per_client: int = Field(default=64, ge=1)
    max_body_bytes_in_flight: int = Field(default=24 * 1024 * 1024, ge=2048)
    # The speed-up package (app/tuning), installed when present: true (every piece), false (the stock core:
    # uvicorn's h11, the SDK's transport, anyio's threads), or the pieces to install, of TUNING_PIECES.
    tuning: Annotated[frozenset[str], NoDecode] = frozenset(TUNING_PIECES)
    migrate_on_start: bool = True
    seed_on_start: bool = True
    widget_domain: str = "https://web-sandbox.oaiusercontent.com"
    db_pool_size: int = Field(default=10, ge=1)
    # Threads a worker runs database reads on at once. Default: 1 on SQLite, 2 x APP_DB_POOL_SIZE on PostgreSQL
    # (why: app/db/database.py, where writes get their own).
    db_read_threads: int | None = Field(default=None, ge=1)
    # Seconds a worker keeps read-mostly reference data (zoo animals, cafés) without asking the database;
    # the worker that writes sees its write at once, the others within this bound. 0: no cache.
    cache_ttl: float = Field(default=2.0, ge=0, le=300)
    db_connect_timeout: float = Field(default=5.0, gt=0)
    db_statement_timeout: float = Field(default=15.0, gt=0)
    # Seconds the requests in flight get to finish after SIGTERM (the server stops accepting at once):
    # under Kubernetes' default 30 s termination grace, with room for the log to be written.
    shutdown_grace: float = Field(default=20.0, ge=0, le=3600)
    # Seconds a client has to send a request's body (the app's own deadline, on any server) and, under the
    # speed-up package's protocol, its headers (from connecting, or from the previous response): a client
    # that trickles a request is answered 408 and cut off. Without it, the front owns the header deadline.
    http_header_timeout: float = Field(default=10.0, gt=0, le=300)
    http_body_timeout: float = Field(default=30.0, gt=0, le=3600)
    # Seconds a client may take in nothing of a response the server is sending before it is cut off (the speed-up
    # package's protocol; without it, the front's).
    http_send_timeout: float = Field(default=30.0, gt=0, le=3600)
    # Under the speed-up package's protocol (without it, the front's): connections one worker keeps
    # open (past it, the one idle longest is closed), and requests and seconds after which a
    # kept-alive connection is closed (its last response says Connection: close).
    # docs/lifecycle.md, "Connections".
    http_max_connections: int = Field(default=1000, ge=2)
    http_connection_requests: int = Field(default=1000, ge=1)
    http_connection_lifetime: float = Field(default=600.0, gt=0)
    # development: demo accounts and generated keys under var_dir are fine; production refuses both
    # unless allowed explicitly (APP_ALLOW_DEMO_ACCOUNTS is the authorization server's, app.authserver.settings).
    env: str = "development"
    var_dir: str = "./var"
    allow_generated_keys: bool = False
    # HMAC key of what the server signs and checks later (download links, sign-in forms: app.secret); generated
    # under var_dir in development.
    secret_key: str | None = Field(default=None, min_length=32)
    # What seals the state of a multi-round-trip request (an ``input_required`` result's
    # requestState),
    # so that the retry may land on any worker or replica: comma-separated keys of 32 or more
    # characters, the first one sealing, every one unsealing (rotation: docs/deploy.md). Unset in
    # development: derived from APP_SECRET_KEY (or the generated one), which every worker shares.
    request_state_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # builtin: the authorization server of app/authserver (its settings: app.authserver.settings);
    # external: an IdP of your own, below.
    auth_mode: str = "builtin"
    # How a tools/call the caller may not use is answered (app/auth/challenge.py): auto (ChatGPT, by its
    # openai/* request _meta, gets the isError result with _meta["mcp/www_authenticate"]; any other client
    # HTTP 401/403, as the MCP authorization spec says), meta (the result for everyone) or http (the HTTP
    # answer for everyone).
    auth_challenge: str = "auto"
    # external: the IdP whose tokens /mcp accepts.
    oauth_issuer: str | None = None
    oauth_jwks_url: str | None = None
    oauth_audience: str | None = None
    # host[:port] entries the outbound guard lets through to private addresses and over http (tests, local dev).
    outbound_allowlist: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # The ports of public hosts the guard fetches from (an allowlisted host:port needs no entry here).
    outbound_ports: Annotated[list[Annotated[int, Field(ge=1, le=65535)]], NoDecode] = Field(
        default_factory=lambda: [443, 80], min_length=1)
    # Who the client is: the right-most X-Forwarded-For entry that is not one of these proxies (addresses, CIDRs).
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["127.0.0.1", "::1"])
    # Metrics (app.observability): GET /metrics for these scrapers only (addresses, networks); with several
    # workers their samples meet in metrics_dir (a fresh temporary directory when unset).
    metrics: bool = True
    metrics_scrapers: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["127.0.0.1", "::1"])
    metrics_dir: str | None = None
    # Limits (app.limits): counted in this process, or in Redis for the whole fleet when redis_url is set.
    redis_url: str | None = None
    redis_prefix: str = Field(default="app", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    limit_callers_per_address: int = Field(default=20, ge=1, le=100_000)
    limit_anonymous_callers: int = Field(default=200, ge=1, le=1_000_000)
    # Per-tool budgets over the ones the tools declare: "tool=rate,tool=off".
    tool_budgets: Annotated[dict[str, str | None], NoDecode] = Field(default_factory=dict)
    # Bytes at rest (app.storage): S3 or, for development and single machines, a local folder.
    storage_backend: str = "local"
    storage_dir: str = "./var/files"
    s3_bucket: str | None = None
    s3_prefix: str = ""
    s3_region: str | None = None
    s3_endpoint_url: str | None = None
    s3_sse: str = "none"
    s3_kms_key_id: str | None = None

    @field_validator("allowed_hosts", "allowed_origins", "outbound_allowlist", "outbound_ports", "trusted_proxies",
                     "metrics_scrapers", "request_state_keys", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        return comma_list(value)

    @field_validator("request_state_keys")
    @classmethod
    def _sealing_keys(cls, keys: list[str]) -> list[str]:
        if short := [i + 1 for i, key in enumerate(keys) if len(key.encode()) < 32]:
            raise ValueError(
                f"every key needs 32 or more characters (key {', '.join(map(str, short))} "
                "is shorter)"
            )
        return keys

    @field_validator("tuning", mode="before")
    @classmethod
    def _tuning(cls, value: object) -> object:
        if isinstance(value, bool):
            return frozenset(TUNING_PIECES) if value else frozenset()
        if not isinstance(value, str):
            return value
        text = value.strip().lower()
        if text in ("true", "1", "yes", "on"):
            return frozenset(TUNING_PIECES)
        if text in ("false", "0", "no", "off", ""):
            return frozenset()
        pieces = frozenset(_comma_items(text))
        if unknown := sorted(pieces - set(TUNING_PIECES)):
            raise ValueError(f"must be true, false, or some of {', '.join(TUNING_PIECES)} (unknown: "
                             f"{', '.join(unknown)})")
        return pieces

    @field_validator(*CHOICES, mode="before")
    @classmethod
    def _one_of(cls, value: object, info: ValidationInfo) -> str:
        assert info.field_name is not None  # a field validator's: pydantic names the field
        return _choice(value, CHOICES[info.field_name])

    @field_validator("allowed_hosts")
    @classmethod
    def _no_wildcard_hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            if "*" in host.removesuffix(":*"):
                raise ValueError("wildcard host names are not supported (DNS-rebinding protection): list each "
                                 "public host name; 'host:*' allows any port")
        return hosts

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies(cls, proxies: list[str]) -> list[str]:
        normal = []
        for proxy in proxies:
            if proxy == "*":
                raise ValueError("'*' would trust an address every client can write: list your proxies' addresses "
                                 "or networks (10.0.0.0/8)")
            try:
                # uvicorn keeps what it cannot parse strictly (10.0.0.1/8) as a name that matches nothing: hand
                # it the network itself.
                network = ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise ValueError(f"{proxy!r} is not an IP address or network") from None
            if network.prefixlen < (8 if network.version == 4 else 7):
                # When every entry is trusted, the left-most is taken: 0.0.0.0/0 is '*' by another name.
                raise ValueError(f"{proxy!r} is too wide to be your proxies (it would trust addresses every client "
                                 "can write): list their addresses or networks (10.0.0.0/8)")
            normal.append(str(network) if "/" in proxy else str(network.network_address))
        return normal

    @field_validator("metrics_scrapers")
    @classmethod
    def _scrapers(cls, scrapers: list[str]) -> list[str]:
        for scraper in scrapers:
            try:
                ipaddress.ip_network(scraper, strict=False)
            except ValueError:
                raise ValueError(f"{scraper!r} is not an IP address or network") from None
        return scrapers

    @field_validator("tool_budgets", mode="before")
    @classmethod
    def _budgets(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        budgets: dict[str, str | None] = {}
        for entry in _comma_items(value):
            name, sep, rate = entry.partition("=")
            if not sep or not name.strip():
                raise ValueError(f"{entry!r}: write tool=rate (search=60/minute) or tool=off")
            rate = rate.strip()
            budgets[name.strip()] = None if rate.lower() == "off" else rate
        return budgets

    @field_validator("tool_budgets")
    @classmethod
    def _budget_rates(cls, value: dict[str, str | None]) -> dict[str, str | None]:
        for rate in value.values():
            if rate is not None:
                parse_rate(rate)
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from redis.asyncio.connection import parse_url

        value = value.strip()
        parts = urlsplit(value)
        if parts.scheme not in ("redis", "rediss", "unix") or not (parts.netloc or parts.path):
            raise ValueError("must be a redis://host:port/db, rediss:// or unix:// URL")
        if parts.scheme != "unix" and parts.path.strip("/") and not parts.path.strip("/").isdigit():
            raise ValueError("the database is a number: redis://host:6379/0")
        try:
            parse_url(value)  # what the client will make of it: port, database, options
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("s3_prefix")
    @classmethod
    def _s3_prefix(cls, value: str) -> str:
        value = value.strip("/")
        return f"{value}/" if value else ""

    @model_validator(mode="after")
    def _s3_needs_bucket(self) -> Settings:
        if self.storage_backend == "s3" and not self.s3_bucket:
            raise ValueError("APP_STORAGE_BACKEND=s3 needs APP_S3_BUCKET")
        if self.s3_kms_key_id and self.s3_sse != "aws:kms":
            raise ValueError("APP_S3_KMS_KEY_ID needs APP_S3_SSE=aws:kms")
        return self

    @field_validator("oauth_issuer", "oauth_jwks_url", "s3_endpoint_url", "privacy_url",
                     "terms_url")
    @classmethod
    def _absolute_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http(s) URL")
        return value

    @field_validator("openai_apps_challenge")
    @classmethod
    def _challenge(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[!-~]{1,512}", value):
            raise ValueError("must be the token OpenAI's platform gave, as it gave it: up to 512 "
                             "printable characters without spaces")
        return value

    @field_validator("operator_contact")
    @classmethod
    def _contact(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value) or urlsplit(value).scheme == "https":
            return value
        raise ValueError("must be an email address or an https URL people can write to")

    @model_validator(mode="after")
    def _external_needs_idp(self) -> Settings:
        if self.auth_mode == "external" and not (self.oauth_issuer and self.oauth_jwks_url):
            raise ValueError("APP_AUTH_MODE=external needs APP_OAUTH_ISSUER and APP_OAUTH_JWKS_URL")
        return self

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(value)
        except (ArgumentError, ValueError):  # ValueError: a port that is no number (its text is the URL's)
            raise ValueError(f"not a database URL: {SUPPORTED_DATABASES}") from None
        if url.drivername in ("postgresql", "postgres"):  # the usual spelling: the driver this server ships
            return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        if url.drivername not in ("sqlite", "sqlite+pysqlite", "postgresql+psycopg"):
            raise ValueError(f"{url.drivername}:// is not supported: {SUPPORTED_DATABASES}")
        return value

    @field_validator("base_url")
    @classmethod
    def _origin_only(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an absolute http(s) origin, e.g. https://mcp.example.com")
        return f"{parts.scheme}://{parts.netloc}"

    @cached_property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    @cached_property
    def resource_metadata_url(self) -> str:
        """RFC 9728 protected-resource metadata of ``/mcp`` (path-suffixed form)."""
        return f"{self.base_url}/.well-known/oauth-protected-resource/mcp"

    @cached_property
    def issuer(self) -> str:
        """Who signs the access tokens /mcp accepts: this server (builtin) or the external IdP."""
        if self.auth_mode == "external" and self.oauth_issuer:
            return self.oauth_issuer
        return self.base_url

    @cached_property
    def token_audience(self) -> str:
        return self.oauth_audience or self.mcp_url

    @property
    def production(self) -> bool:
        return self.env == "production"

    @cached_property
    def host_allow_list(self) -> list[str]:
        """Host header values accepted on /mcp (DNS-rebinding protection)."""
        if self.allowed_hosts:
            return list(self.allowed_hosts)
        netloc = urlsplit(self.base_url).netloc
        hosts = [netloc]
        if ":" not in netloc.rsplit("]", 1)[-1]:
            hosts.append(f"{netloc}:*")
        hosts += [f"{h}:*" for h in _LOCAL_HOSTS] + list(_LOCAL_HOSTS)
        return hosts

    @cached_property
    def origin_allow_list(self) -> list[str]:
        """Origin header values accepted on /mcp; absent Origin is always fine."""
        if self.allowed_origins:
            return list(self.allowed_origins)
        origins = [self.base_url, "https://chatgpt.com", "https://chat.openai.com"]
        origins += [f"http://{h}:*" for h in _LOCAL_HOSTS] + [f"http://{h}" for h in _LOCAL_HOSTS]
        return origins


class SettingsError(Exception):
    """Bad configuration: ``lines`` holds one human-readable line per bad variable."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class SettingsPart(BaseSettings):
    """The settings of one part (a feature, the authorization server), declared beside its code so that deleting
    the part deletes them. Read like Settings (environment, then ``.env``) under the prefix the subclass sets
    (``APP_<FEATURE>_`` for a feature), and reported the same way: one line per bad variable."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_file=".env", extra="ignore", frozen=True)
    # Names this part once read that are gone: set, they would be ignored silently, so they are refused.
    renamed: ClassVar[dict[str, str]] = {}
    # Fields holding secrets: their value is never repeated in an error line (nor that of a field whose name says
    # secret, password, token, key, credential or dsn).
    secrets: ClassVar[tuple[str, ...]] = ()
    # Variables this part reads beyond its fields' names (a pattern each, matched whole): not
    # warned about as names of no setting (app.parts.unknown_settings).
    also_reads: ClassVar[tuple[re.Pattern[str], ...]] = ()


P = TypeVar("P", bound=BaseSettings)


def load_settings(**overrides: Any) -> Settings:
    return load_part(Settings, **overrides)


def load_part(kind: type[P], **overrides: Any) -> P:
    """``kind`` read from the environment (``overrides`` first); SettingsError on bad values, all of them."""
    # extra="ignore" is for the environment (other parts' variables); an override is code, and a misspelt or
    # misplaced one (another part's setting) must not pass unnoticed.
    if unknown := sorted(k for k in overrides if not k.startswith("_") and k not in kind.model_fields):
        raise TypeError(f"{kind.__name__} has no setting {', '.join(unknown)}")
    lines = [f"{old}: renamed to {new}" for old, new in getattr(kind, "renamed", {}).items() if old in os.environ]
    prefix = str(kind.model_config.get("env_prefix") or "")
    hidden = getattr(kind, "secrets", ())
    try:
        settings = kind(**overrides)
    except ValidationError as exc:
        described = [_describe(error, prefix, hidden, kind) for error in exc.errors()]
        raise SettingsError(lines + described) from None
    if lines:
        raise SettingsError(lines)
    return settings


# The test suite's own variables (tests/conftest.py: APP_TEST_DATABASE_URL, APP_REQUIRE_REDIS, ...),
# which the servers it starts inherit: no setting's, and never warned about.
NOT_SETTINGS = re.compile(r"APP_(TEST|REQUIRE)_[A-Z0-9_]+")
SECRET_NAMES = re.compile(r"secret|password|passwd|token|key|credential|dsn", re.IGNORECASE)
# A value of these types is never a secret, whatever its name says (APP_OAUTH_ACCESS_TOKEN_TTL).
NOT_SECRET = (bool, int, float)


def _describe(error: Any, prefix: str, secrets: tuple[str, ...],
              kind: type[BaseSettings] | None = None) -> str:
    message = plain_error(error)
    if not error.get("loc"):  # a rule across variables: the message names them
        return message
    field = str(error["loc"][0])
    value = error.get("input")
    # Named as a secret (a part that forgot to list one), or listed: the value is never repeated;
    # unless the field holds a number or a switch, which no secret is.
    declared = kind.model_fields.get(field) if kind is not None else None
    harmless = declared is not None and declared.annotation in NOT_SECRET
    secret = field in secrets or (SECRET_NAMES.search(field) is not None and not harmless)
    shown = (f" (got {value!r})" if not secret and isinstance(value, str | int | float)
             and len(repr(value)) <= 80 else "")
    return f"{prefix}{field.upper()}: {message}{shown}"
