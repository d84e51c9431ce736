"""Alembic environment. The URL comes from the programmatic Config (see app/db/migrate.py)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from app.db.base import Base
from app.db.database import make_engine
from app.features import import_models

import_models()
config = context.config
MIGRATION_LOCK_KEY = 0x6D6370617070  # arbitrary, constant: "mcpapp"
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with connectable.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            # Replicas starting together must not migrate concurrently: the first takes the
            # lock and migrates, the others wait and then find nothing left to do.
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            connection.commit()
        try:
            context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if postgres:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
                connection.commit()
    connectable.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
