"""Cafés against the migrated and seeded database (SQLite or PostgreSQL)."""

from __future__ import annotations

import shutil

import pytest
from alembic import command

from app.db.migrate import alembic_config, migrations_dir
from app.features.cafes import service as cafes
from tests.conftest import count_rows, prepare

pytestmark = pytest.mark.demo("cafes")


@pytest.mark.parametrize(
    ("language", "locale", "city", "expected_city", "intro_start"),
    [
        ("fr", "fr-FR", "Lisboa", "Lisbon", "Voici quelques cafés à Lisbonne qui"),
        ("es", "es-MX", "Ciudad de México", "Mexico City", "Aquí tienes algunas cafeterías en Ciudad de México"),
        ("zh", "zh-CN", "上海", "Shanghai", "以下是上海一些"),
        ("zh", "zh-CN", "Lisbon", "Lisbon", "以下是里斯本一些"),
        ("pt", "pt-BR", "New York", "New York", "Aqui estão alguns cafés em Nova York"),
        ("pt", "pt-BR", None, "São Paulo", "Aqui estão alguns cafés muito queridos em São Paulo"),
        ("en", None, None, "New York", "Here are some well-loved cafés in New York"),
        ("en", "en-GB", "Atlantis", "London", "I don't know cafés in Atlantis yet"),
        ("en", "en-US", "  SAN   FRANCISCO ", "San Francisco", "Here are some cafés in San Francisco"),
    ],
)
def test_cafes_follow_the_city_hint_then_the_locale(db, language, locale, city, expected_city, intro_start):
    rec = db.read_sync(lambda uow: cafes.recommend(uow, language, locale, city))
    assert rec.output.city == expected_city
    assert rec.intro.startswith(intro_start)
    assert 1 <= len(rec.output.cafes) <= cafes.MAX_CAFES
    assert all(c.name and c.address for c in rec.output.cafes)
    assert set(rec.details) and all(d["address"] for d in rec.details.values())


def test_a_city_named_in_one_language_is_found_from_another(db):
    rec = db.read_sync(lambda uow: cafes.recommend(uow, "en", "en-US", "Lisbonne"))
    assert rec.output.city == "Lisbon" and rec.intro.startswith("Here are some cafés in Lisbon")


def test_city_names_are_matched_without_case_accents_or_punctuation():
    assert cafes.normalize_city("São  Paulo") == "sao paulo"
    assert cafes.normalize_city("New-York.") == "new york"


BATCH_ALTER_CITIES = """
import sqlalchemy as sa
from alembic import op

revision = "9999_extra"
down_revision = "0006_cafe_city_names"
branch_labels = None
depends_on = None


def upgrade():
    # On SQLite this copies cafe_cities and drops the original, which three tables reference.
    with op.batch_alter_table("cafe_cities") as batch:
        batch.alter_column("name", type_=sa.String(120))


def downgrade():
    pass
"""


def test_a_batch_migration_on_a_referenced_table_deletes_no_referencing_rows(tmp_path, fresh_database):
    prepare(fresh_database)
    scripts = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), scripts, ignore=shutil.ignore_patterns("__pycache__"))
    (scripts / "versions" / "9999_extra.py").write_text(BATCH_ALTER_CITIES)
    config = alembic_config(fresh_database)
    config.set_main_option("script_location", str(scripts))
    command.upgrade(config, "heads")
    assert [count_rows(fresh_database, t) for t in ("cafe_cities", "cafes", "cafe_city_names")] == [13, 43, 52]
