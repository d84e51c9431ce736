"""One tools/call over real HTTP, on every path (the speed-up package's lane and the SDK's transport; the 2025 era
and 2026-07-28), instrumented: this server decodes the body once (the admission), and checks the caller against
the tool's schemes once, whoever answers. On the SDK's path the transport parses its own copy of the bytes (it
takes the request as bytes): counted apart, as the SDK's."""

from __future__ import annotations

import json
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pydantic
import pydantic_core
import pytest
from mcp.server.auth.provider import AccessToken

from app.auth import schemes
from app.auth.schemes import NOAUTH, oauth2
from app.auth.scopes import Scope
from app.feature import Feature
from app.main import create_app
from app.mcp import admission
from app.settings import load_settings
from tests.challenges import plain_call
from tests.demos import tuning_installed
from tests.fakes import StaticTokenVerifier
from tests.serving import serving

pytestmark = pytest.mark.any_database  # nothing here depends on the database


def _tools(registry, deps) -> None:
    @registry.tool(name="count_open", title="Open", description="anyone", read_only=True, destructive=False,
                   open_world=False, security=[NOAUTH])
    async def count_open(note: str = "") -> str:
        return "open"

    @registry.tool(name="count_notes", title="Notes", description="needs counted.read", read_only=True,
                   destructive=False, open_world=False, security=[oauth2("counted.read")])
    async def count_notes(note: str = "") -> str:
        return "notes"


COUNTED = Feature(name="counted", tools=_tools, scopes=[Scope("counted.read", {"en": "read"})])
PATHS = [(True, "2025-06-18"), (False, "2025-06-18"), (True, "2026-07-28"), (False, "2026-07-28")]


@pytest.fixture(scope="module")
def servers(database_url: str) -> Iterator[dict[bool, str]]:
    def build(tuning: bool) -> Callable[[str], Any]:
        def app(base_url: str):
            verifier = StaticTokenVerifier({"reader": AccessToken(
                token="reader", client_id="c", scopes=["counted.read"], subject="acct-r", resource=f"{base_url}/mcp")})
            settings = load_settings(database_url=database_url, base_url=base_url, tuning=tuning, _env_file=None)
            return create_app(settings, token_verifier=verifier, features=[COUNTED])
        return app

    with serving(build(True)) as lane, serving(build(False)) as stock:
        yield {True: lane, False: stock}


class Decodes:
    """Every decode of one request body's bytes in this process, by the module that made it."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.by: Counter[str] = Counter()

    def count(self, data: Any, depth: int) -> None:
        """Count a decode of ``data`` if it is this request's body, by the module ``depth`` frames up."""
        if isinstance(data, bytes | bytearray | str) and self.marker in (
                data.decode("utf-8", "replace") if not isinstance(data, str) else data):
            self.by[sys._getframe(depth + 1).f_globals.get("__name__", "?")] += 1

    def wrap(self, decode: Callable[..., Any]) -> Callable[..., Any]:
        def counting(data: Any, *args: Any, **kwargs: Any) -> Any:
            self.count(data, 1)
            return decode(data, *args, **kwargs)
        return counting

    @property
    def ours(self) -> int:
        return sum(n for module, n in self.by.items() if module.startswith("app."))

    @property
    def sdks(self) -> int:
        return sum(n for module, n in self.by.items() if module.startswith("mcp."))


@pytest.fixture
def instrumented(monkeypatch: pytest.MonkeyPatch) -> tuple[Decodes, Counter[str]]:
    decodes = Decodes(f"note-{uuid.uuid4().hex}")
    for module, name in ((pydantic_core, "from_json"), (admission, "from_json"), (json, "loads")):
        monkeypatch.setattr(module, name, decodes.wrap(getattr(module, name)))
    # pydantic's own ways to parse bytes into a model (what a second parse would most likely use)
    validate_json = pydantic.TypeAdapter.validate_json
    model_validate_json = pydantic.BaseModel.model_validate_json.__func__

    def adapter_validate_json(adapter: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        decodes.count(data, 1)
        return validate_json(adapter, data, *args, **kwargs)

    def model_validate(cls: Any, data: Any, *args: Any, **kwargs: Any) -> Any:
        decodes.count(data, 1)
        return model_validate_json(cls, data, *args, **kwargs)

    monkeypatch.setattr(pydantic.TypeAdapter, "validate_json", adapter_validate_json)
    monkeypatch.setattr(pydantic.BaseModel, "model_validate_json", classmethod(model_validate))
    checks: Counter[str] = Counter()
    real = schemes.unmet_scopes

    def counting(security: Any, token: AccessToken | None) -> Any:
        checks["scope checks"] += 1
        return real(security, token)

    monkeypatch.setattr(schemes, "unmet_scopes", counting)
    return decodes, checks


@pytest.mark.parametrize("call", ["a noauth tool", "an oauth2 tool, admitted", "an oauth2 tool, refused to ChatGPT"])
@pytest.mark.parametrize(("tuning", "version"), PATHS,
                         ids=[f"{v}, {'lane' if lane else 'SDK transport'}" for lane, v in PATHS])
def test_one_tools_call_is_decoded_once_and_checked_once(servers, instrumented, tuning: bool, version: str,
                                                         call: str):
    decodes, checks = instrumented
    tool, token, meta = {"a noauth tool": ("count_open", None, None),
                         "an oauth2 tool, admitted": ("count_notes", "reader", None),
                         "an oauth2 tool, refused to ChatGPT": ("count_notes", None, {"openai/locale": "en"})}[call]
    response = plain_call(f"{servers[tuning]}/mcp", tool, token=token, version=version, meta=meta,
                          arguments={"note": decodes.marker})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result.get("isError", False) is (call == "an oauth2 tool, refused to ChatGPT")
    laned = tuning and tuning_installed()
    assert (decodes.ours, decodes.sdks, checks["scope checks"]) == (1, 0 if laned else 1, 1), decodes.by
