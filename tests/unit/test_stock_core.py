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
# Underscore names of the standard library this code names (types in annotations, not internals it reads).
STDLIB_PRIVATE = frozenset({"argparse._SubParsersAction", "hashlib._Hash"})


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


def our_private_names(modules: list[Path]) -> set[str]:
    """Every underscore name this code defines itself: functions, classes, attributes it assigns, fields."""
    ours: set[str] = set()
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                ours.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                ours.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                ours.add(node.id)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                ours.add(node.target.id)
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                      for t in node.targets):
                ours.update(c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant))
    return ours


def library_classes(tree: ast.AST, names: dict[str, str]) -> set[str]:
    """The classes of a module that subclass one of the libraries' (their ``self`` is partly the library's)."""
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and any(names.get(ast.unparse(b).split(".")[0].split("[")[0], "").split(".")[0] in LIBRARIES
                    for b in node.bases)}


def owners(tree: ast.AST) -> dict[ast.AST, str]:
    """Each node inside a class body, with that class's name."""
    found: dict[ast.AST, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for inner in ast.walk(node):
                found.setdefault(inner, node.name)
    return found


def violations(modules: list[Path], root: Path = ROOT) -> list[str]:
    ours = our_private_names(core_modules(root))
    found: list[str] = []
    for module in modules:
        where = module.relative_to(root).as_posix()
        tree = ast.parse(module.read_text(encoding="utf-8"))
        names = imported_names(tree)
        theirs, inside = library_classes(tree, names), owners(tree)
        for node in ast.walk(tree):
            imported = ([node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                        else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in imported:
                parts = name.split(".")
                if parts[0] not in LIBRARIES:
                    continue
                if parts[:2] == ["uvicorn", "protocols"]:
                    found.append(f"{where}:{node.lineno} imports {name}")
                elif any(part.startswith("_") for part in parts):
                    found.append(f"{where}:{node.lineno} imports the private module {name}")
            if isinstance(node, ast.ClassDef):
                for base in node.bases:
                    head = ast.unparse(base).split("[")[0]
                    first, _, rest = head.partition(".")
                    origin = names.get(first)
                    if origin is None or origin.split(".")[0] not in LIBRARIES:
                        continue
                    full = f"{origin}.{rest}" if rest else origin
                    if full not in EXTENSION_POINTS:
                        found.append(f"{where}:{node.lineno} class {node.name} subclasses {full}")
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                # self of a class of ours is ours, unless the class is also one of the libraries'
                mine = owner in ("self", "cls") and inside.get(node) not in theirs
                if not mine and node.attr not in ours and f"{owner}.{node.attr}" not in STDLIB_PRIVATE:
                    found.append(f"{where}:{node.lineno} reads {owner}.{node.attr}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "setattr") and len(node.args) > 1 \
                    and isinstance(name := node.args[1], ast.Constant) \
                    and isinstance(name.value, str) and name.value.startswith("_") \
                    and not name.value.startswith("__") and name.value not in ours:
                found.append(f"{where}:{node.lineno} {node.func.id}(..., {name.value!r})")
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
        "    def read(self, other):\n"
        "        return other._own, self._own\n", encoding="utf-8")
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
