"""The core runs on stock parts: outside the speed-up package (app/tuning) nothing imports uvicorn's protocols or a
private module of uvicorn, Starlette or the SDK, subclasses their machinery (documented extension points aside),
or reads an attribute they keep private. Read from the source (AST), so a new module is held to it at once; and
with the package turned off, the app imports nothing of it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

LIBRARIES = ("uvicorn", "starlette", "mcp", "mcp_types")
SPEEDUPS = ROOT / "app" / "tuning"
# Classes of those libraries made to be subclassed (their documentation says so).
EXTENSION_POINTS = frozenset({
    "starlette.authentication.AuthenticationBackend", "starlette.authentication.AuthenticationError",
    "starlette.authentication.BaseUser", "starlette.middleware.base.BaseHTTPMiddleware",
    "mcp.server.auth.middleware.bearer_auth.BearerAuthBackend", "mcp.server.auth.provider.TokenVerifier",
    "mcp.server.mcpserver.exceptions.ToolError",
})
# Underscore names of the standard library this code names (types in annotations, not internals it reads;
# os._exit is public, documented as the exit that skips clean-up, which a child process needs).
STDLIB_PRIVATE = frozenset({"argparse._SubParsersAction", "hashlib._Hash", "os._exit"})


def core_modules(root: Path = ROOT) -> list[Path]:
    return sorted(p for p in (root / "app").rglob("*.py") if SPEEDUPS not in p.parents)


def imported_names(tree: ast.AST) -> dict[str, str]:
    """Each name a module binds by import, with what it is (module.name)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:  # import a.b binds a; import a.b as c binds c to a.b
                top = alias.name.split(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
    return names


def defined_in(cls: ast.ClassDef) -> set[str]:
    """The underscore names a class of ours defines itself: its methods and class attributes, and what its
    methods assign to ``self`` (or ``cls``)."""
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def library_origin(expression: ast.AST, names: dict[str, str]) -> str | None:
    """What a name or dotted expression refers to when it comes from one of the libraries (module.Name)."""
    first, _, rest = ast.unparse(expression).split("[")[0].partition(".")
    origin = names.get(first)
    if origin is None or origin.split(".")[0] not in LIBRARIES:
        return None
    return f"{origin}.{rest}" if rest else origin


def forbidden_module(name: str) -> str | None:
    """Why importing ``name`` (a dotted module path) is not the core's to do, or None."""
    parts = name.split(".")
    if parts[0] not in LIBRARIES:
        return None
    if parts[:2] == ["uvicorn", "protocols"]:
        return f"imports {name}"
    if any(part.startswith("_") and not part.startswith("__") for part in parts):
        return f"imports the private module {name}"
    return None


def violations(modules: list[Path], root: Path = ROOT) -> list[str]:
    found: list[str] = []
    for module in modules:
        where = module.relative_to(root).as_posix()
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = imported_names(tree)
        # For each node inside a class: the class, when it also subclasses a library class (its self is partly
        # the library's: only what the class defines itself is ours to read).
        theirs: dict[ast.AST, set[str]] = {}
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if any(library_origin(base, names) for base in cls.bases):
                own = defined_in(cls)
                for inner in ast.walk(cls):
                    theirs[inner] = own

        def note(node: ast.AST, what: str, where: str = where) -> None:
            found.append(f"{where}:{getattr(node, 'lineno', 0)} {what}")

        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # from uvicorn import protocols: the module is uvicorn.protocols
                    for candidate in (node.module, f"{node.module}.{alias.name}"):
                        if why := forbidden_module(candidate):
                            note(node, why)
                            break
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if why := forbidden_module(alias.name):
                        note(node, why)
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    if (full := library_origin(base, names)) is not None and full not in EXTENSION_POINTS:
                        note(node, f"class {node.name} subclasses {full}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                if owner in ("self", "cls"):
                    if node in theirs and node.attr not in theirs[node]:
                        note(node, f"reads {owner}.{node.attr}")
                elif f"{owner}.{node.attr}" not in STDLIB_PRIVATE:  # another object's private attribute
                    note(node, f"reads {owner}.{node.attr}")
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                    and isinstance(key := node.slice.value, str) and key.startswith("_") \
                    and not key.startswith("__") and (ast.unparse(node.value).endswith(".__dict__")
                                                     or ast.unparse(node.value).startswith("vars(")):
                note(node, f"reads {ast.unparse(node)}")
            if isinstance(node, ast.Call) and node.args and isinstance(arg := node.args[0], ast.Constant) \
                    and isinstance(arg.value, str) and ast.unparse(node.func) in (
                        "importlib.import_module", "import_module", "__import__", "import_from_string"):
                if why := forbidden_module(arg.value.split(":")[0]):
                    note(node, why)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1 \
                    and isinstance(name := node.args[1], ast.Constant) \
                    and isinstance(name.value, str) and name.value.startswith("_") \
                    and not name.value.startswith("__"):
                note(node, f"{node.func.id}(..., {name.value!r})")
    return found


def test_the_core_imports_no_uvicorn_protocol_subclasses_no_machinery_and_reads_no_private_attribute():
    assert violations(core_modules()) == []


def test_the_check_finds_each_kind_of_reach_into_a_library(tmp_path: Path):
    sample = tmp_path / "app" / "http" / "sample.py"
    sample.parent.mkdir(parents=True)
    sample.write_text(
        "from uvicorn.protocols.http.h11_impl import H11Protocol\n"
        "import uvicorn\n"
        "from mcp.server._streamable_http_modern import handle_modern_request\n"
        "from mcp.server.streamable_http_manager import StreamableHTTPSessionManager as Manager\n"
        "from starlette.authentication import AuthenticationBackend\n"
        "class Fast(H11Protocol): pass\n"
        "class Config(uvicorn.Config): pass\n"
        "class Sessions(Manager): pass\n"
        "class Backend(AuthenticationBackend):\n"
        "    def who(self):\n"
        "        return self._backend_state\n"
        "def peek(manager, request):\n"
        "    request._receive\n"
        "    return manager._task_group, getattr(manager, '_lifespan_state')\n"
        "class Mine:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
        "    def read(self):\n"
        "        return self._own\n", encoding="utf-8")
    disguised = tmp_path / "app" / "http" / "disguised.py"
    disguised.write_text(
        "import importlib\n"
        "from uvicorn import protocols\n"
        "from mcp.server import _streamable_http_modern\n"
        "class Fast(protocols.http.httptools_impl.HttpToolsProtocol): pass\n"
        "def peek(request, manager):\n"
        "    request._receive = None\n"
        "    importlib.import_module('uvicorn.protocols.http.h11_impl')\n"
        "    return request._receive, vars(manager)['_lifespan_state'], manager.__dict__['_task_group']\n",
        encoding="utf-8")
    assert sorted(v.split(" ", 1)[1] for v in violations([sample], tmp_path)) == sorted([
        "imports uvicorn.protocols.http.h11_impl",
        "imports the private module mcp.server._streamable_http_modern",
        "class Fast subclasses uvicorn.protocols.http.h11_impl.H11Protocol",
        "class Config subclasses uvicorn.Config",
        "class Sessions subclasses mcp.server.streamable_http_manager.StreamableHTTPSessionManager",
        "reads self._backend_state",
        "reads request._receive",
        "reads manager._task_group",
        "getattr(..., '_lifespan_state')",
    ])
    assert sorted(v.split(" ", 1)[1] for v in violations([disguised], tmp_path)) == sorted([
        "imports uvicorn.protocols",
        "imports the private module mcp.server._streamable_http_modern",
        "class Fast subclasses uvicorn.protocols.http.httptools_impl.HttpToolsProtocol",
        "reads request._receive",
        "reads request._receive",  # written, then read: neither is ours to do
        "imports uvicorn.protocols.http.h11_impl",
        "reads vars(manager)['_lifespan_state']",
        "reads manager.__dict__['_task_group']",
    ])


def test_with_the_package_turned_off_the_app_imports_nothing_of_it_and_serve_runs_uvicorns_own_protocol(
        tmp_path: Path):
    script = (
        "import sys\n"
        "from app.main import create_app\n"
        "from app.http.serving import serve_config\n"
        "from app.settings import load_settings\n"
        f"settings = load_settings(database_url='sqlite:///{tmp_path / 'off.db'}', tuning=False, _env_file=None)\n"
        "create_app(settings)\n"
        "config = serve_config(settings, 'app.main:create_app_from_env', host='127.0.0.1', port=1, workers=1)\n"
        "print(sorted(m for m in sys.modules if m == 'app.tuning' or m.startswith('app.tuning.')), config.http)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "APP_VAR_DIR": str(tmp_path / "var"),
                               "APP_AUTH_MODE": "external", "APP_OAUTH_ISSUER": "https://idp.invalid/",
                               "APP_OAUTH_JWKS_URL": "https://idp.invalid/jwks.json"})
    assert (done.returncode, done.stdout.strip()) == (0, "[] h11"), done.stderr[-2000:]
