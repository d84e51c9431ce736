"""Alembic environment. The URL comes from the programmatic Config (see app/db/migrate.py)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from app.db.base import Base
from app.db.engine import make_engine
from app.db.migrate import unmanaged_filter
from app.main import discover_features

# Autogenerate compares the database with the models of the features present now;
# a deleted feature's tables therefore show up as tables to drop.
discover_features()
config = context.config
target_metadata = Base.metadata
MIGRATION_LOCK_KEY = 0x6D6370617070  # arbitrary, constant: "mcpapp"

# Full-text indexes and other backend-specific objects the models leave undeclared.
_include_name = unmanaged_filter(target_metadata)


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True, include_name=_include_name)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = make_engine(config.get_main_option("sqlalchemy.url") or "", pooled=False)
    with connectable.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            # Replicas starting together must not migrate concurrently: the first takes the
            # lock and migrates, the others wait and then find nothing left to do.
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            connection.commit()
        try:
            context.configure(connection=connection, target_metadata=target_metadata,
                              include_name=_include_name, compare_type=True, render_as_batch=True)
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
