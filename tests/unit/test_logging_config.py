"""The chosen level holds for the libraries that set their own (one-shot commands print only errors)."""

from __future__ import annotations

import logging

import psycopg  # noqa: F401  (its import sets its logger to WARNING)

from app.logging import configure_logging


def test_a_library_that_sets_its_own_level_still_follows_the_chosen_one():
    try:
        configure_logging("json", "error")
        assert logging.getLogger("psycopg").getEffectiveLevel() == logging.ERROR
        configure_logging("json", "info")
        assert logging.getLogger("psycopg").getEffectiveLevel() == logging.WARNING
    finally:
        configure_logging("console", "info", sync=True)
