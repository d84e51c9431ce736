"""A drop migration generated on SQLite runs on PostgreSQL: tables that point at others go first (and come
back last), whatever order autogenerate listed them in."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from app.db.migrate import _ordered

# cafes and cafe_city_names point at cafe_cities; saved_recipes points at nothing that goes.
REFERS = {"cafes": {"cafe_cities"}, "cafe_city_names": {"cafe_cities"}, "cafe_cities": set(),
          "saved_recipes": {"accounts"}, "accounts": set()}


def _drop(table: str) -> SimpleNamespace:
    return SimpleNamespace(table_name=table, kind="drop")


def _names(ops: list) -> list[str]:
    return [getattr(op, "table_name", None) or op.sql for op in ops]


def test_every_listing_order_drops_the_referencing_tables_before_the_one_they_point_at():
    for order in itertools.permutations(["cafe_cities", "cafes", "cafe_city_names", "saved_recipes"]):
        dropped = _names(_ordered([_drop(t) for t in order], REFERS, referencing_first=True))
        assert sorted(dropped) == sorted(order)
        assert dropped.index("cafe_cities") > max(dropped.index("cafes"), dropped.index("cafe_city_names")), order


def test_the_downgrade_creates_the_table_pointed_at_first():
    for order in itertools.permutations(["cafes", "cafe_cities", "cafe_city_names"]):
        created = _names(_ordered([_drop(t) for t in order], REFERS, referencing_first=False))
        assert created[0] == "cafe_cities", order


def test_a_tables_own_operations_and_the_full_text_drop_before_it_move_with_it():
    fts = SimpleNamespace(sql="DROP TABLE IF EXISTS cafe_cities_fts")
    ops = [SimpleNamespace(table_name="cafe_cities", kind="drop_index"), fts, _drop("cafe_cities"), _drop("cafes")]
    assert _names(_ordered(ops, REFERS, referencing_first=True)) == [
        "cafes", "cafe_cities", "DROP TABLE IF EXISTS cafe_cities_fts", "cafe_cities"]


def test_a_tables_operations_listed_apart_still_go_as_one_block_in_dependency_order():
    ops = [SimpleNamespace(table_name="cafes", kind="drop_index"), _drop("cafe_cities"), _drop("cafes")]
    assert [(op.table_name, op.kind) for op in _ordered(ops, REFERS, referencing_first=True)] == [
        ("cafes", "drop_index"), ("cafes", "drop"), ("cafe_cities", "drop")]
