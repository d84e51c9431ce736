"""Configuration, read once from the environment (prefix ``APP_``) and passed down.

Nothing here runs at import time: ``Settings()`` is built by the CLI or by
``create_app_from_env`` and handed to every component that needs it.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def _csv(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="APP_", env_file=".env", extra="ignore", frozen=True)

    base_url: str = "http://127.0.0.1:8000"
    database_url: str = "sqlite:///./var/app.db"
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_format: Literal["json", "console"] = "console"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    migrate_on_start: bool = True
    widget_domain: str = "https://web-sandbox.oaiusercontent.com"
    db_pool_size: int = Field(default=10, ge=1)

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        return _csv(value)

    @field_validator("base_url")
    @classmethod
    def _origin_only(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("APP_BASE_URL must be an absolute http(s) origin, e.g. https://mcp.example.com")
        return f"{parts.scheme}://{parts.netloc}"

    @cached_property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

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
