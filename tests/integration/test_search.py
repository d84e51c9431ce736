"""Full-text search: same results contract on SQLite FTS5 and PostgreSQL tsvector."""

from __future__ import annotations

import pytest
from alembic.autogenerate import produce_migrations, render_python_code
from alembic.migration import MigrationContext
from sqlalchemy import MetaData, create_engine

from app.db import Base
from app.db.migrate import add_full_text_drops, include_name, include_object, upgrade
from app.features.search import service
from app.features.search.repository import SearchRepository, tokens
from app.main import discover_features

pytestmark = pytest.mark.demo("search")


def _search(db, q, limit=8):
    return db.read_sync(lambda uow: service.search(uow, q, limit)).results


def test_the_corpus_has_over_a_thousand_documents(db):
    assert db.read_sync(lambda uow: uow.repository(SearchRepository).count()) >= 1000


@pytest.mark.parametrize(
    ("query", "expected_first"),
    [
        ("urlparse", "urllib.parse.urlparse"),
        ("asyncio gather", "asyncio.gather"),
        ("ordered dict", "collections.OrderedDict"),
        ("path join", "os.path.join"),
    ],
)
def test_the_function_a_query_names_ranks_first(db, query, expected_first):
    titles = [h.title for h in _search(db, query)]
    assert titles[0] == expected_first, titles


MODULES = ("os", "sys", "re", "json", "pathlib", "asyncio", "collections", "itertools", "functools",
           "datetime", "typing", "subprocess", "logging", "unittest", "argparse", "math", "random",
           "dataclasses", "enum", "threading")


@pytest.mark.parametrize("module", MODULES)
def test_a_query_naming_a_module_finds_the_module_itself_first(db, module):
    hits = _search(db, module)
    assert hits[0].id == f"py:{module}", [h.id for h in hits]
    assert hits[0].url == f"https://docs.python.org/3/library/{module}.html#module-{module}"
    assert hits[0].score > max(h.score for h in hits[1:])
    assert len({h.id for h in hits}) == len(hits)  # not twice


def test_snippets_read_without_docstring_markup(db):
    for query in ("re match", "json", "fnmatch", "functools wraps", "pathlib", "os path"):
        for hit in _search(db, query):
            assert "``" not in hit.snippet and ":func:`" not in hit.snippet, hit
            assert ":mod:`" not in hit.snippet and "<built-in" not in hit.snippet, hit


def test_a_module_and_its_function_lead_a_query_naming_both(db):
    titles = [h.title for h in _search(db, "json dumps")]
    assert titles[0].startswith("json — ") and titles[1] == "json.dumps", titles


def test_results_are_ordered_by_descending_score_with_snippets_and_docs_urls(db):
    hits = _search(db, "regular expression")
    assert len(hits) == 8
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.snippet and h.url.startswith("https://docs.python.org/3/library/") for h in hits)


def test_the_last_word_matches_as_a_prefix(db):
    assert any(h.title.startswith("json.") for h in _search(db, "json deco"))


def test_when_no_document_has_every_word_any_word_matches(db):
    hits = _search(db, "zzzunknownword dumps")
    assert hits and any("dumps" in h.title for h in hits)


@pytest.mark.parametrize("hostile", ['"', "*", "-", "'; --", "\x00", "!!!", "(((", "&|!", ":*", "∑"])
def test_input_made_only_of_query_syntax_finds_nothing_and_breaks_nothing(db, hostile):
    assert _search(db, hostile) == []


@pytest.mark.parametrize(
    ("hostile", "words"),
    [("NEAR(json dumps)", "near json dumps"), ("json AND OR NOT dumps", "json and or not dumps"),
     ("title:urlparse", "title urlparse"), ("-urlparse", "urlparse"), ("urlparse:*", "urlparse"),
     ("'; DROP TABLE search_documents; --", "drop table search documents"),
     ("asyncio & gather | !x", "asyncio gather x")],
)
def test_query_syntax_in_user_input_means_nothing_but_its_words(db, hostile, words):
    assert [h.id for h in _search(db, hostile)] == [h.id for h in _search(db, words)]
    assert db.read_sync(lambda uow: uow.repository(SearchRepository).count()) >= 5116


def test_tokens_keep_only_words_and_cap_their_number():
    assert tokens("json.dumps(obj) -- OR *") == ["json", "dumps", "obj", "or"]
    assert len(tokens(" ".join(["w"] * 50))) == 12


def test_dropping_the_documents_table_drops_its_full_text_index_on_either_backend(fresh_database):
    """What `revision` generates when a fork deletes this feature, whichever backend it runs against."""
    upgrade(fresh_database)
    discover_features()
    without_search = MetaData()
    for table in Base.metadata.tables.values():
        if not table.name.startswith("search_"):
            table.to_metadata(without_search)
    engine = create_engine(fresh_database)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": include_name, "include_object": include_object,
                                                         "target_metadata": without_search})
        script = produce_migrations(context, without_search)
        add_full_text_drops(context, None, [script])
    engine.dispose()
    lines = [line.strip() for line in render_python_code(script.upgrade_ops).splitlines()
             if line.strip().startswith("op.")]
    assert lines == ["op.drop_index(op.f('ix_search_documents_module'), table_name='search_documents')",
                     "op.drop_index(op.f('ix_search_documents_owner'), table_name='search_documents')",
                     "op.execute('DROP TABLE IF EXISTS search_documents_fts')",
                     "op.drop_table('search_documents')"]
