"""``python -m app new-feature NAME``: a feature folder in the house style (a read-only tool, its
use case, its output schema) and its tests, passing as written (docs/forking.md, "Add a tool").

The templates (``templates/*.tmpl``) are ``string.Template`` files: ``$name`` (``air_quality``),
``$Name`` (``AirQuality``, for classes), ``$title`` (``Air quality``) and ``$tool``
(``air_quality_hello``). The files go into the source checkout this ``app`` package is imported
from: an installed copy is refused, since what is written there would belong to no repository.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from app.command import CommandLineError
from app.parts import compiled_only

TEMPLATES = Path(__file__).parent / "templates"
PACKAGE = Path(__file__).resolve().parents[1]  # this app
# Each template, and where it is written for a feature named {name}.
FILES = (
    ("feature_init.py.tmpl", "app/features/{name}/__init__.py"),
    ("tool.py.tmpl", "app/features/{name}/tool.py"),
    ("service.py.tmpl", "app/features/{name}/service.py"),
    ("schemas.py.tmpl", "app/features/{name}/schemas.py"),
    ("listing.toml.tmpl", "app/features/{name}/listing.toml"),
    ("test_unit.py.tmpl", "tests/unit/test_{name}.py"),
    ("test_e2e.py.tmpl", "tests/e2e/test_{name}_over_http.py"),
)
NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME = 20  # the names built from it (its tool's, its classes') keep the written lines short
COMMAND = ("is a command of python -m app: the feature's own commands (python -m app {name} ...) "
           "would never run")
DEV_COMMAND = "is a command of ./dev: the feature's own commands (./dev {name} ...) would never run"
# Names a feature cannot take, and why.
RESERVED = {
    **dict.fromkeys(("serve", "migrate", "revision", "seed", "check", "listing", "users",
                     "clients"), COMMAND),
    # ./dev's own words: ./dev NAME COMMAND would run ./dev's, never the feature's.
    **dict.fromkeys(("test", "bench", "widgets", "lock", "help"), DEV_COMMAND),
    # tests/demos.py reads pytest.mark.authserver and pytest.mark.tuning as these parts' own.
    "authserver": "names the built-in authorization server (app/authserver), a part of its own",
    "tuning": "names the speed-up package (app/tuning), a part of its own",
    "probe": "is the core tests' own feature (tests/e2e/probe_feature.py), served beside the rest",
}


@dataclass(frozen=True)
class Names:
    """What the templates say for a feature named ``name``."""

    name: str

    @property
    def camel(self) -> str:
        return "".join(word.capitalize() for word in self.name.split("_"))

    @property
    def title(self) -> str:
        return " ".join(word for word in self.name.split("_") if word).capitalize()

    @property
    def tool(self) -> str:
        return f"{self.name}_hello"


def check_name(name: str) -> None:
    """Refuse a name no feature can have, in one line that says why."""
    if not NAME.fullmatch(name):
        raise CommandLineError(f"{name!r} is not a feature name: lowercase letters, digits and "
                               "underscores, starting with a letter (it names a Python package)")
    if len(name) > MAX_NAME:
        raise CommandLineError(f"{name!r} is longer than {MAX_NAME} characters")
    if keyword.iskeyword(name):
        raise CommandLineError(f"{name!r} is a Python keyword: no package can be named so")
    if name in RESERVED:
        raise CommandLineError(f"{name!r} {RESERVED[name].format(name=name)}")


def render(name: str) -> dict[str, str]:
    """The files of a feature named ``name``: path in the checkout -> text."""
    names = Names(name)
    values = {"name": name, "Name": names.camel, "title": names.title, "tool": names.tool}
    return {path.format(name=name): Template((TEMPLATES / template).read_text("utf-8"))
            .substitute(values) for template, path in FILES}


def checkout(package: Path = PACKAGE) -> Path:
    """The source checkout holding ``package`` (this ``app``)."""
    root = package.parent
    if not ((root / "pyproject.toml").is_file() and (root / "tests" / "conftest.py").is_file()):
        raise CommandLineError(f"writes into a source checkout, and app is installed at {package}: "
                               "run it in a clone of the repository")
    return root


def new_feature(name: str, root: Path | None = None) -> list[str]:
    """Write the feature ``name`` and its tests into ``root`` (this checkout); returns the paths
    written. Nothing is written unless every file can be."""
    check_name(name)
    root = checkout() if root is None else root
    # A folder of compiled files only is what `git rm -r` left of a removed feature: a free name.
    if not compiled_only(root / "app" / "features" / name):
        raise CommandLineError(f"app/features/{name} exists already: choose another name")
    files = render(name)
    if taken := [path for path in files if (root / path).exists()]:
        raise CommandLineError(f"{taken[0]} exists already: choose another name")
    written: list[Path] = []
    for path, text in files.items():
        try:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
        except OSError as exc:  # a full disk, a read-only folder: what was written goes again
            for done in written:
                done.unlink(missing_ok=True)
            raise CommandLineError(f"cannot write {path}: {exc.strerror or exc}") from exc
        written.append(root / path)
    return list(files)
