"""Alembic migrations: ONE linear history. Ships inside the wheel as ``app.migrations``.

Revisions never import application code: a migration must mean the same thing in
five years, whatever the models look like by then.
"""
