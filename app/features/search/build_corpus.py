"""Build the offline full-text search corpus from the Python standard library's docstrings.

Source and licence
    Every document is a docstring of the CPython standard library, read with
    ``importlib`` and ``inspect`` from the interpreter that runs this script.
    That text is part of CPython, distributed under the PSF License Agreement
    (version 2), Copyright (c) 2001 Python Software Foundation; All Rights
    Reserved. The licence allows redistribution provided the agreement and the
    copyright notice are kept and the changes are summarised: ``data/NOTICE.txt``
    does all three, so update it when the interpreter or these rules change.

Why offline
    The build must not need the network (no docs.python.org scraping, no
    downloads): the interpreter already ships the text, so the corpus can be
    rebuilt in CI or on an air-gapped machine, and the same interpreter always
    produces byte-identical output (sorted records, canonical JSON, gzip mtime=0).
    A different Python version gives different text; NOTICE.txt records which
    one was used.

Rebuild
    python -m app.features.search.build_corpus [--out PATH]

Output: gzip-compressed JSON Lines sorted by ``id``, one object per line with the
keys ``id``, ``title``, ``url``, ``module``, ``kind`` and ``body``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import inspect
import io
import json
import os
import pkgutil
import re
import sys
import sysconfig
import warnings
from collections import Counter
from pathlib import Path
from types import ModuleType

DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "corpus.jsonl.gz"
DOCS = "https://docs.python.org/3/library/"
MIN_DOC, MAX_BODY, MAX_ID, MAX_TITLE_LINE, MAX_DEFAULT = 40, 4000, 200, 120, 80

# Importing these opens a browser, prints, needs a display, is test or demo code,
# or is Windows-only. distutils is shadowed by setuptools inside virtualenvs (so
# its text would depend on the venv) and is removed in 3.12 anyway.
SKIP_TOP = frozenset(
    "antigravity this idlelib tkinter turtle turtledemo lib2to3 ensurepip pydoc_data test"
    " msvcrt winreg winsound nt distutils".split()
)
SKIP_PARTS = frozenset({"test", "tests", "idle_test", "__main__"})
# ~120 generated codec tables whose docstrings are the same boilerplate: pure noise for search.
NO_SUBMODULES = frozenset({"encodings"})
# Public aliases that are not packages, so pkgutil cannot discover them.
EXTRA_MODULES = ("os.path",)
# Objects implemented in these modules are documented (and linked) under the public module.
IMPL_HOMES = {"posix": "os", "posixpath": "os.path", "genericpath": "os.path", "pyexpat": "xml.parsers.expat"}
# Submodules with their own docs.python.org page; any other submodule links to its nearest parent.
SUBMODULE_PAGES = frozenset(
    "os.path collections.abc concurrent.futures importlib.metadata importlib.resources"
    " importlib.resources.abc xml.etree.ElementTree xml.dom xml.dom.minidom xml.dom.pulldom xml.sax"
    " xml.sax.handler urllib.parse urllib.request urllib.error urllib.robotparser http.client http.server"
    " http.cookies http.cookiejar email.message email.parser email.generator email.policy email.errors"
    " email.headerregistry email.contentmanager email.mime email.header email.charset email.encoders"
    " email.utils email.iterators logging.config logging.handlers multiprocessing.shared_memory"
    " curses.ascii curses.panel unittest.mock xmlrpc.client xmlrpc.server html.parser html.entities".split()
)
_ASYNCIO_PAGES = {
    "task": "tasks taskgroups timeouts coroutines threads",
    "runner": "runners",
    "future": "futures",
    "eventloop": "events base_events selector_events proactor_events unix_events",
    "sync": "locks",
    "stream": "streams",
    "queue": "queues",
    "subprocess": "subprocess",
    "exceptions": "exceptions",
    "protocol": "protocols transports",
}
PAGE_OVERRIDES = {
    "posixpath": "os.path",
    "genericpath": "os.path",
    "ntpath": "os.path",
    "encodings": "codecs",
    "xml.parsers.expat": "pyexpat",
    "xml.sax.saxutils": "xml.sax.utils",
    "xml.sax.xmlreader": "xml.sax.reader",
    **{f"asyncio.{sub}": f"asyncio-{page}" for page, subs in _ASYNCIO_PAGES.items() for sub in subs.split()},
}
# Defaults computed at import time from this installation (paths, venv or not) are shown as the
# expression that produced them, so the corpus does not depend on where or how Python is installed.
_RUNTIME_VALUES = {
    sysconfig.get_default_scheme(): "sysconfig.get_default_scheme()",
    sys.executable: "sys.executable",
    sys.prefix: "sys.prefix",
    sys.base_prefix: "sys.base_prefix",
    sysconfig.get_path("stdlib"): "sysconfig.get_path('stdlib')",
}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
# The base interpreter's library, not the venv's (whose platstdlib would include site-packages).
_BASE = {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}
_STDLIB_DIRS = tuple(
    sorted({os.path.realpath(sysconfig.get_path(k, vars=_BASE)) + os.sep for k in ("stdlib", "platstdlib")})
)


def _skipped(name: str) -> bool:
    parts = name.split(".")
    return (
        parts[0] in SKIP_TOP
        or (len(parts) > 1 and parts[0] in NO_SUBMODULES)
        or any(p.startswith("_") or p in SKIP_PARTS for p in parts)
    )


def _import(name: str) -> ModuleType | None:
    # Some modules print, warn or call sys.exit() when imported on the "wrong" platform.
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        try:
            module = importlib.import_module(name)
        except KeyboardInterrupt:
            raise
        except BaseException:
            return None
    # Reject anything a .pth hook or site-packages substitutes for the real stdlib module.
    file = getattr(module, "__file__", None)
    if file is None:
        return module
    path = os.path.realpath(file)
    in_site_packages = {"site-packages", "dist-packages"} & set(path.split(os.sep))
    return module if path.startswith(_STDLIB_DIRS) and not in_site_packages else None


def _collect_modules() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}

    def visit(name: str) -> None:
        if name in found or _skipped(name) or (module := _import(name)) is None:
            return
        found[name] = module
        # iter_modules, not walk_packages: walk_packages imports every subpackage
        # (test suites included) before the skip rules could reject it.
        subs = pkgutil.iter_modules(getattr(module, "__path__", None) or ())
        for sub in sorted(info.name for info in subs):
            visit(f"{name}.{sub}")

    for name in sorted(set(sys.stdlib_module_names) | set(EXTRA_MODULES)):
        visit(name)
    return found


def _home(origin: str) -> str:
    return IMPL_HOMES.get(origin, origin.lstrip("_"))


def _url(module: str, qualname: str = "", origin: str = "") -> str:
    if module == "builtins":  # builtins are documented on functions.html with bare anchors
        return f"{DOCS}functions.html#{qualname}" if qualname else f"{DOCS}builtins.html#module-builtins"
    # A package re-export (asyncio.gather from asyncio.tasks) lives on its submodule's page.
    parts, page = (origin if origin.startswith(module + ".") else module).split("."), None
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        page = PAGE_OVERRIDES.get(name) or (name.lower() if i == 1 or name in SUBMODULE_PAGES else None)
        if page:
            break
    return f"{DOCS}{page}.html#{module}.{qualname}" if qualname else f"{DOCS}{page}.html#module-{module}"


class _Shown(str):
    """Stands in for a parameter default so the signature prints a stable, safe text."""

    __repr__ = str.__str__


def _render_default(value: object) -> str:
    if value is os.environ or value is getattr(os, "environb", None):
        return "os.environ"  # the real repr would leak the build machine's environment
    if isinstance(value, str) and value in _RUNTIME_VALUES:
        return _RUNTIME_VALUES[value]
    if isinstance(value, (set, frozenset)):  # set order changes with PYTHONHASHSEED
        text = f"{type(value).__name__}({{{', '.join(sorted(map(_render_default, value)))}}})"
    else:
        text = _ADDRESS.sub("", repr(value))
    return text if len(text) <= MAX_DEFAULT else "…"


def _signature(name: str, obj: object) -> str | None:
    if not callable(obj):  # what inspect.signature refuses anyway
        return None
    try:
        sig = inspect.signature(obj)
    except Exception:  # C text signatures can name missing constants and raise almost anything
        return None
    params = [
        p if p.default is p.empty else p.replace(default=_Shown(_render_default(p.default)))
        for p in sig.parameters.values()
    ]
    return _ADDRESS.sub("", name + str(sig.replace(parameters=params)))


def _doc(obj: object) -> str | None:
    # Read __doc__ directly: inspect.getdoc would copy base-class text onto every override.
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or doc == getattr(type(obj), "__doc__", None):
        return None  # e.g. a descriptor instance that only reports its own class's docstring
    doc = inspect.cleandoc(doc).strip()  # cleandoc keeps a whitespace-only last line in 3.11
    return doc if len(doc) >= MIN_DOC else None


def _record(module: str, origin: str, kind: str, qualname: str, doc: str, sig: str | None) -> dict[str, str]:
    if kind == "module":
        first = doc.splitlines()[0].strip()
        first = first if len(first) <= MAX_TITLE_LINE else first[: MAX_TITLE_LINE - 1].rstrip() + "…"
        uid, title = module, f"{module} — {first}"
    else:
        uid = title = f"{module}.{qualname}"
    body = f"{sig}\n\n{doc}" if sig else doc
    url = _url(module, qualname, origin)
    return {
        "id": f"py:{uid}",
        "title": title,
        "url": url,
        "module": module,
        "kind": kind,
        "body": body[:MAX_BODY].rstrip(),
    }


def _listing_record(name: str, module: ModuleType, names: list[tuple[str, str]]) -> dict[str, str]:
    """The page of a module whose docstring says too little: its own line, if any, then the
    classes and functions it documents (classes first, in order)."""
    doc = inspect.cleandoc(module.__doc__ or "").strip()
    ordered = sorted(names, key=lambda item: (item[1] != "class", item[0].lower()))
    shown = ", ".join(attr for attr, _ in ordered[:6]) + (", …" if len(ordered) > 6 else "")
    listed = "; ".join(f"{attr} ({kind})" for attr, kind in ordered)
    listing = f"The {name} module documents: {listed}."
    body = f"{doc.splitlines()[0].strip()}\n\n{listing}" if doc else listing
    return {"id": f"py:{name}", "title": f"{name} — {shown}", "url": _url(name, "", name),
            "module": name, "kind": "module", "body": body[:MAX_BODY].rstrip()}


def _members(cls: type):
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, (classmethod, staticmethod)):
            member = member.__func__
        if inspect.isdatadescriptor(member):
            yield name, member, False  # property or C attribute: no call signature
        elif inspect.isroutine(member):
            yield name, member, True


def _choose_owners(modules: dict[str, ModuleType]) -> dict[tuple[str, str], tuple]:
    """Map each (defining module, name) to the one public module that documents it."""
    owners: dict[tuple[str, str], tuple] = {}
    for name, module in modules.items():
        exported = getattr(module, "__all__", None)
        namespace = dict(vars(module))
        for attr in exported or ():  # lazy exports (concurrent.futures' module __getattr__)
            if isinstance(attr, str) and attr not in namespace:
                with contextlib.suppress(Exception):
                    namespace[attr] = getattr(module, attr)
        for attr, obj in sorted(namespace.items()):
            if attr.startswith("_") or getattr(obj, "__name__", None) != attr:
                continue  # private, or an alias of something documented under its own name
            origin = getattr(obj, "__module__", None)
            if not (inspect.isclass(obj) or inspect.isroutine(obj)) or not isinstance(origin, str):
                continue
            # A re-export is documented under its public home (json.JSONEncoder rather than
            # json.encoder.JSONEncoder, os.getcwd rather than posix.getcwd); an object implemented in a
            # private module (_io, _collections_abc) is taken from whichever public module exports it.
            home = (origin.startswith(name + ".") and attr in (exported or ())) or (
                origin != name and _home(origin) == name
            )
            private = any(p.startswith("_") for p in origin.split("."))
            listed = exported is None or attr in exported
            if origin != name and not home and not (private and listed):
                continue
            rank = (0 if home else 1 if origin == name else 2, name.count("."), name)
            if (origin, attr) not in owners or rank < owners[origin, attr][0]:
                owners[origin, attr] = (rank, name, obj)
    return owners


def build() -> list[dict[str, str]]:
    modules = _collect_modules()
    records: dict[str, dict[str, str]] = {}

    def add(record: dict[str, str]) -> None:
        if len(record["id"]) <= MAX_ID:
            records.setdefault(record["id"], record)

    # One module object can be reachable under two names (os.path is posixpath): keep the public one.
    by_object: dict[int, str] = {}
    for name in sorted(modules, key=lambda n: (IMPL_HOMES.get(modules[n].__name__) != n, n.count("."), n)):
        by_object.setdefault(id(modules[name]), name)
    for name in sorted(by_object.values()):
        if doc := _doc(modules[name]):
            add(_record(name, name, "module", "", doc, None))

    owners = sorted(_choose_owners(modules).items(), key=lambda item: (item[1][1], item[0]))
    # A module without a docstring of its own (pathlib, dataclasses and enum in 3.11; asyncio's is
    # one short line) still gets its page: what it documents, so that a search for its name finds
    # the module itself first (app.features.search.service).
    documented: dict[str, list[tuple[str, str]]] = {}
    for (_, attr), (_, name, obj) in owners:
        kind = "class" if inspect.isclass(obj) else "function"
        documented.setdefault(name, []).append((attr, kind))
    for name in sorted(by_object.values()):
        if f"py:{name}" not in records and documented.get(name):
            add(_listing_record(name, modules[name], documented[name]))
    for (origin, attr), (_, name, obj) in owners:
        if not inspect.isclass(obj):
            if doc := _doc(obj):
                add(_record(name, origin, "function", attr, doc, _signature(attr, obj)))
            continue
        if doc := _doc(obj):
            add(_record(name, origin, "class", attr, doc, _signature(attr, obj)))
        for member_name, member, callable_ in _members(obj):
            if doc := _doc(member):
                sig = _signature(member_name, member) if callable_ else None
                add(_record(name, origin, "method", f"{attr}.{member_name}", doc, sig))
    return [records[key] for key in sorted(records)]


def write(records: list[dict[str, str]], out: Path) -> bytes:
    text = "".join(
        json.dumps(r, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n" for r in records
    )
    # gzip.compress writes no file name and, with mtime=0, no timestamp: same input, same bytes.
    data = gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, out)  # never leave a half-written corpus behind
    return data


def main(argv: list[str] | None = None) -> None:
    # No docstring under python -OO: no description then.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    records = build()
    data = write(records, args.out)
    kinds = ", ".join(f"{kind}={n}" for kind, n in sorted(Counter(r["kind"] for r in records).items()))
    print(f"{len(records)} documents ({kinds}), {len(data)} bytes -> {args.out}")


if __name__ == "__main__":
    main()
