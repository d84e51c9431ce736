"""``new-feature``'s names and files (app/scaffold): a name no feature can have is one line saying
why, and what is written is the house's. Written into a checkout and run there:
tests/e2e/test_new_feature.py."""

from __future__ import annotations

import re
import tomllib

import pytest

from app.__main__ import AUTHSERVER_COMMANDS, CORE_COMMANDS
from app.command import CommandLineError
from app.scaffold import MAX_NAME, RESERVED, check_name, checkout, new_feature, render
from tests.demos import PACKAGES, marked_demos


@pytest.mark.parametrize("name", ["weather", "air_quality", "v2", "a" * MAX_NAME])
def test_a_lowercase_identifier_is_a_feature_name(name):
    check_name(name)


@pytest.mark.parametrize(("name", "why"), [
    ("Weather", "is not a feature name: lowercase letters, digits and underscores, starting with a "
                "letter"),
    ("weather-now", "is not a feature name"), ("2fast", "is not a feature name"),
    ("_private", "is not a feature name"), ("", "is not a feature name"),
    ("a" * (MAX_NAME + 1), f"is longer than {MAX_NAME} characters"),
    ("class", "is a Python keyword"),
    ("serve", "is a command of python -m app: the feature's own commands (python -m app serve ...) "
              "would never run"),
    ("authserver", "names the built-in authorization server"),
    ("probe", "is the core tests' own feature"),
    ("widgets", "is a command of ./dev: the feature's own commands (./dev widgets ...) would never run"),
])
def test_a_name_no_feature_can_have_is_refused_in_one_line_saying_why(name, why):
    with pytest.raises(CommandLineError) as refused:
        check_name(name)
    assert str(refused.value).startswith(f"{name!r} {why}") and "\n" not in str(refused.value)


def test_the_commands_and_the_deletable_parts_are_reserved():
    # A feature's own commands run as `python -m app NAME COMMAND`: a core command shadows them.
    names = {*CORE_COMMANDS, *AUTHSERVER_COMMANDS, *PACKAGES} - {"new-feature"}
    assert names <= set(RESERVED)


def test_the_written_files_are_the_features_with_its_names_and_lines_ruff_accepts():
    for name in ("weather", "a_b" * 6 + "ab"):
        files = render(name)
        assert sorted(files) == sorted([f"app/features/{name}/{module}.py"
                                        for module in ("__init__", "tool", "service", "schemas")]
                                       + [f"app/features/{name}/listing.toml",
                                          f"tests/unit/test_{name}.py",
                                          f"tests/e2e/test_{name}_over_http.py"])
        for path, text in files.items():
            if path.endswith(".toml"):
                assert tomllib.loads(text)["cases"][0]["tool"] == f"{name}_hello"
            else:
                compile(text, path, "exec")
            assert "$" not in text, path
            assert max(len(line) for line in text.splitlines()) <= 100, path
        # Its tests go with its folder (docs/forking.md); its tool and classes carry its name.
        marks = {marked_demos(text) for path, text in files.items() if path.startswith("tests/")}
        assert marks == {frozenset({name})}
        assert f'name="{name}_hello"' in files[f"app/features/{name}/tool.py"]
    schemas = render("air_quality")["app/features/air_quality/schemas.py"]
    assert "class AirQualityGreeting(BaseModel):" in schemas


def test_nothing_is_written_unless_every_file_can_be(tmp_path):
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_weather.py").write_text("# mine\n")
    with pytest.raises(CommandLineError, match=r"^tests/unit/test_weather.py exists already"):
        new_feature("weather", tmp_path)
    written = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()]
    assert written == ["tests/unit/test_weather.py"]


def test_a_write_that_fails_halfway_takes_back_what_it_wrote(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "e2e").write_text("a file where the folder goes\n")
    with pytest.raises(CommandLineError, match=r"^cannot write tests/e2e/test_weather_over_http.py: "):
        new_feature("weather", tmp_path)
    left = [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()]
    assert left == ["tests/e2e"]


def test_a_feature_folder_refuses_the_name_unless_git_left_only_compiled_files_in_it(tmp_path):
    features = tmp_path / "app" / "features"
    (features / "notes" / "__pycache__").mkdir(parents=True)
    (features / "notes" / "__pycache__" / "tool.cpython-311.pyc").write_bytes(b"")
    assert "app/features/notes/tool.py" in new_feature("notes", tmp_path)
    with pytest.raises(CommandLineError, match=r"^app/features/notes exists already"):
        new_feature("notes", tmp_path)


def test_only_a_source_checkout_is_written_into(tmp_path):
    installed = tmp_path / "site-packages" / "app"
    installed.mkdir(parents=True)
    with pytest.raises(CommandLineError, match=re.escape(f"app is installed at {installed}")):
        checkout(installed)
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "conftest.py").write_text("")
    assert checkout(tmp_path / "app") == tmp_path
