"""Features: one folder each, discovered by the composition root (``app.main``).

A feature folder's ``__init__.py`` defines ``FEATURE = Feature(...)`` (see
``app.feature``); ``tool.py``, ``service.py``, ``repository.py``, ``schemas.py``,
``models.py``, ``seed.py`` and ``data/`` hold the rest. Add a feature by adding a
folder (plus a migration for its tables); remove one by deleting its folder (plus a
migration that drops them). See docs/forking.md.
"""
