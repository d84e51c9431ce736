"""Run alembic programmatically: core migrations plus each feature's own folder."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config

from app.features import migration_dirs

ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS = ROOT / "migrations"


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    locations = [MIGRATIONS / "versions", *migration_dirs()]
    # os.pathsep keeps paths with spaces intact.
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("version_locations", os.pathsep.join(str(p) for p in locations))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "heads") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)
