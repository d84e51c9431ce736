"""Alembic environment. The URL comes from the programmatic Config (see app/db/migrate.py)."""

from __future__ import annotations

from alembic import context

from app.db.base import Base
from app.db.database import make_engine
from app.features import import_models

import_models()
config = context.config
target_metadata = Base.metadata


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with connectable.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    connectable.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
