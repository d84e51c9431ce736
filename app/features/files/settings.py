"""The files feature's settings (APP_FILES_*): how big a fetched file may be, how long anonymous uploads and
download links last, where fetched files are spooled while they are analysed."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from app.settings import ENV_PREFIX, SettingsPart


class FilesSettings(SettingsPart):
    model_config = SettingsConfigDict(env_prefix=f"{ENV_PREFIX}FILES_")

    # Fetched files are spooled under <dir>/spool while they are analysed (whatever the storage backend).
    dir: str = "./var/files"
    max_bytes: int = Field(default=50 * 1024 * 1024, ge=1024)
    fetch_timeout: float = Field(default=60.0, gt=0, le=600)
    anon_ttl: int = Field(default=3600, ge=60, le=30 * 24 * 3600)
    url_ttl: int = Field(default=300, ge=30, le=3600)
    # Bytes an anonymous caller may add per anon_ttl (its address and all anonymous callers: scaled).
    anon_quota: int = Field(default=50 * 1024 * 1024, ge=1024, le=10**12)
