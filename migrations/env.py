"""Alembic environment. The URL comes from the programmatic Config (see app/db/migrate.py)."""

from __future__ import annotations

from alembic import context

from app.db import migrate
from app.db.base import Base
from app.db.engine import make_engine
from app.db.locks import MIGRATION_LOCK, advisory_lock
from app.main import discover_features
from app.parts import load_authserver_models

# Autogenerate compares the database with the models of the features present now;
# a deleted feature's tables therefore show up as tables to drop.
load_authserver_models()
discover_features()
config = context.config
target_metadata = Base.metadata
HOOKS = {"include_name": migrate.include_name, "include_object": migrate.include_object}


def run_migrations_offline() -> None:
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=target_metadata,
                      literal_binds=True, **HOOKS)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    # SQLite: foreign keys off while tables are copied and replaced (see make_engine).
    connectable = make_engine(config.get_main_option("sqlalchemy.url") or "", pooled=False, foreign_keys=False)
    with connectable.connect() as connection, advisory_lock(connection, MIGRATION_LOCK):
        migrate.restamp_legacy(connection)
        context.configure(connection=connection, target_metadata=target_metadata, compare_type=True,
                          render_as_batch=True, process_revision_directives=migrate.revision_directives, **HOOKS)
        with context.begin_transaction():
            context.run_migrations()
        migrate.check_foreign_keys(connection)
    connectable.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
