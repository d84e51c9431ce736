"""The files feature's settings (APP_FILES_*): how big a fetched file may be, how long anonymous uploads and
download links last, where fetched files are spooled while they are analysed."""

from __future__ import annotations

import os

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from app.settings import ENV_PREFIX, Settings, SettingsError, SettingsPart

# The local backend's folder was APP_FILES_DIR's before it was the core's APP_STORAGE_DIR (this feature's spool kept
# the name): a deployment that set only the old one, and has objects there, would find them gone, so it is told.
MOVED_STORAGE_DIR = ("APP_STORAGE_DIR: the local storage folder is no longer APP_FILES_DIR (now the files feature's "
                     "spool only): set APP_STORAGE_DIR to the folder that holds objects/ (APP_FILES_DIR={!r} before)")


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
    # Analysis processes per server worker (a fixed number, not the node's cores, which a container
    # does not own), the processor time each analysis gets, and the memory it may add to its
    # process (app/features/files/slots.py: shares, waits and caps; docs/files.md: the figures).
    analysis_slots: int = Field(default=2, ge=1, le=64)
    analysis_cpu_seconds: float = Field(default=20.0, gt=0, le=600)
    analysis_memory_mb: int = Field(default=128, ge=32, le=65536)


def storage_dir_refusal(core: Settings, files: FilesSettings) -> SettingsError | None:
    """Local storage whose objects are where only the old variable points (from the environment or .env alike)."""
    old_only = "storage_dir" not in core.model_fields_set and "dir" in files.model_fields_set
    moved = os.path.normpath(files.dir) != os.path.normpath(core.storage_dir)
    if core.storage_backend == "local" and old_only and moved and os.path.isdir(os.path.join(files.dir, "objects")):
        return SettingsError([MOVED_STORAGE_DIR.format(files.dir)])
    return None
