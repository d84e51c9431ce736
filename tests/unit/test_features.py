"""Feature discovery in the composition root: every folder is a feature, or a clear refusal."""

from __future__ import annotations

import sys
import textwrap
import uuid

import pytest

from app.main import FeatureError, discover_features


@pytest.fixture
def package(tmp_path, monkeypatch):
    name = f"fakefeatures_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, root
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def _feature(root, folder, name=None):
    (root / folder).mkdir()
    (root / folder / "__init__.py").write_text(textwrap.dedent(f"""
        from app.feature import Feature
        FEATURE = Feature(name={(name or folder)!r}, instructions="Use {folder}.")
    """))


def test_each_feature_folder_is_found_in_name_order(package):
    name, root = package
    _feature(root, "beta")
    _feature(root, "alpha")
    assert [f.name for f in discover_features(name)] == ["alpha", "beta"]


def test_a_folder_without_init_is_refused_by_name(package):
    name, root = package
    _feature(root, "good")
    (root / "forgotten").mkdir()
    (root / "forgotten" / "tool.py").write_text("x = 1\n")
    with pytest.raises(FeatureError, match=r"forgotten is not a feature: it has no __init__.py"):
        discover_features(name)


def test_a_folder_left_with_only_compiled_files_after_a_delete_is_ignored(package):
    name, root = package
    _feature(root, "kept")
    (root / "deleted" / "__pycache__").mkdir(parents=True)
    (root / "deleted" / "__pycache__" / "tool.cpython-311.pyc").write_bytes(b"")
    # A subpackage keeps its own (app/features/files/analysis/): still nothing but compiled files.
    (root / "deleted" / "analysis" / "__pycache__").mkdir(parents=True)
    (root / "deleted" / "analysis" / "__pycache__" / "pdf.cpython-311.pyc").write_bytes(b"")
    assert [f.name for f in discover_features(name)] == ["kept"]


def test_a_folder_with_a_source_file_below_its_compiled_ones_is_still_refused(package):
    name, root = package
    (root / "half" / "__pycache__").mkdir(parents=True)
    (root / "half" / "analysis").mkdir()
    (root / "half" / "analysis" / "pdf.py").write_text("x = 1\n")
    with pytest.raises(FeatureError, match=r"half is not a feature: it has no __init__.py"):
        discover_features(name)


def test_an_init_without_feature_is_refused(package):
    name, root = package
    (root / "bare").mkdir()
    (root / "bare" / "__init__.py").write_text('"""no FEATURE here"""\n')
    with pytest.raises(FeatureError, match=r"bare/__init__.py must define FEATURE"):
        discover_features(name)


def test_two_features_with_one_name_are_refused(package):
    name, root = package
    _feature(root, "one", name="same")
    _feature(root, "two", name="same")
    with pytest.raises(FeatureError, match="feature names must be unique: same"):
        discover_features(name)


def test_a_declaration_refused_at_import_names_the_feature_folder(package):
    name, root = package
    (root / "badwidget").mkdir()
    (root / "badwidget" / "__init__.py").write_text(
        "from app.mcp.widgets import Widget\nW = Widget(name='w', title='W', description='d', display_modes=('tv',))\n")
    with pytest.raises(FeatureError, match=r"badwidget: widget w: display modes must be"):
        discover_features(name)


def test_a_seed_that_does_not_take_the_demo_accounts_is_refused_by_folder(package):
    name, root = package
    (root / "oldseed").mkdir()
    (root / "oldseed" / "__init__.py").write_text(textwrap.dedent("""
        from app.feature import Feature
        def seed(uow):
            return "seeded"
        FEATURE = Feature(name="oldseed", seed=seed)
    """))
    with pytest.raises(FeatureError, match=r"oldseed: its seed must take \(uow, demo_accounts\)"):
        discover_features(name)
