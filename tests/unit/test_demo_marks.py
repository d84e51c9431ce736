"""The test modules a fork deletes with a demo are found by their mark (tests/demos.py); a module that
needs a demo without saying so would stay behind and break the fork's suite."""

from __future__ import annotations

from tests.conftest import ROOT
from tests.demos import DEMOS, demo_test_modules, feature_names, imported_demos, marked_demos, suite_modules


def test_every_test_module_that_imports_a_demo_is_marked_with_it():
    unmarked = {}
    for module in suite_modules(ROOT):
        source = module.read_text(encoding="utf-8")
        if missing := imported_demos(source) - marked_demos(source):
            unmarked[module.relative_to(ROOT).as_posix()] = sorted(missing)
    assert unmarked == {}


def test_the_mark_is_read_alone_in_a_list_and_for_every_demo():
    assert marked_demos('import pytest\npytestmark = pytest.mark.demo("zoo")\n') == {"zoo"}
    assert marked_demos('pytestmark = [pytest.mark.anyio, pytest.mark.demo("files", "search")]\n') == {
        "files", "search"}
    assert marked_demos("pytestmark = pytest.mark.demo(*DEMOS)\n") == set(DEMOS)
    assert marked_demos("pytestmark = pytest.mark.anyio\n") == set()
    # Only the module's own pytestmark counts: a mark on one test would leave the rest of the module behind.
    assert marked_demos('@pytest.mark.demo("zoo")\ndef test_x(): pass\n') == set()


def test_the_authorization_server_mark_is_read_alone_and_in_a_list_and_its_imports_are_found():
    assert marked_demos("pytestmark = pytest.mark.authserver\n") == {"authserver"}
    assert marked_demos('pytestmark = [pytest.mark.authserver, pytest.mark.demo("zoo")]\n') == {"authserver", "zoo"}
    assert marked_demos("pytestmark = pytest.mark.anyio\n") == set()
    assert imported_demos("from app.authserver.accounts import create_account\n") == {"authserver"}
    assert imported_demos("from app import authserver\nimport app.authserver.keys\n") == {"authserver"}
    assert imported_demos("from app.auth.scopes import Scope\n") == set()  # the resource side is core


def test_the_speed_up_package_mark_is_read_alone_and_in_a_list_and_its_imports_are_found():
    assert marked_demos("pytestmark = pytest.mark.tuning\n") == {"tuning"}
    assert marked_demos("pytestmark = [pytest.mark.anyio, pytest.mark.tuning, pytest.mark.authserver]\n") == {
        "tuning", "authserver"}
    assert imported_demos("from app.tuning.lane import SingleExchangeLane\n") == {"tuning"}
    assert imported_demos("from app import tuning\nimport app.tuning.threads\n") == {"tuning"}
    assert imported_demos("from app.mcp.admission import McpAdmission\nimport app.http.serving\n") == set()


def test_the_speed_up_package_has_test_modules_to_go_with_it():
    assert bool(demo_test_modules(ROOT, ("tuning",))) is (ROOT / "app" / "tuning" / "__init__.py").is_file()


def test_imports_of_a_demo_are_found_in_every_spelling_and_core_packages_are_not_demos():
    source = ("import app.features.zoo.service\nfrom app.features.search.repository import SearchRepository\n"
              "from app.features import cafes\nfrom app.features.account import tool\nimport app.storage\n")
    assert imported_demos(source) == {"zoo", "search", "cafes"}


def test_each_demo_this_tree_has_test_modules_to_go_with_it():
    # A fork may have none (its __init__.py: `git rm -r` leaves a folder of compiled files behind).
    here = [demo for demo in DEMOS if (ROOT / "app" / "features" / demo / "__init__.py").is_file()]
    assert {demo: bool(demo_test_modules(ROOT, (demo,))) for demo in here} == dict.fromkeys(here, True)


def test_a_mark_may_name_a_forkers_own_feature_as_well_as_a_demo(tmp_path):
    for name in ("weather", "zoo"):
        (tmp_path / "app" / "features" / name).mkdir(parents=True)
        (tmp_path / "app" / "features" / name / "__init__.py").write_text("")
    (tmp_path / "app" / "features" / "__pycache__").mkdir()  # what `git rm -r` leaves: not a feature
    (tmp_path / "app" / "features" / "notes").mkdir()  # no __init__.py: not a package
    assert feature_names(tmp_path) == tuple(sorted({*DEMOS, "weather"}))
