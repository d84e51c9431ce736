"""What ``registry.tool(...)`` derives, and what it refuses, before any request is served."""

from __future__ import annotations

from typing import Annotated

import anyio
import pytest
from mcp.types import CallToolResult
from pydantic import BaseModel

from app.auth.schemes import NOAUTH, oauth2
from app.mcp.registry import RegistryError, ToolRegistry
from app.mcp.widgets import Widget

WIDGET = Widget(name="demo", title="Demo", description="d", html_override="<p>demo</p>")
HINTS = dict(read_only=True, destructive=False, open_world=False)


class Out(BaseModel):
    n: int


async def _out() -> Annotated[CallToolResult, Out]: ...


def _registry() -> ToolRegistry:
    return ToolRegistry(widget_domain="https://w.example.com", name="test-server", title="Test Server",
                        resource_metadata_url="https://mcp.example.com/.well-known/oauth-protected-resource/mcp")


def _tools(registry: ToolRegistry) -> dict:
    server = registry.build()
    return {t.name: t for t in anyio.run(server.list_tools)}


def test_a_status_line_over_64_characters_is_refused_at_registration():
    with pytest.raises(RegistryError, match="invoking status is 65 chars"):
        _registry().tool(name="t", title="T", description="d", security=[NOAUTH], invoking="x" * 65, **HINTS)


def test_widget_tools_get_matching_template_keys_and_app_only_tools_are_private():
    registry = _registry()

    @registry.tool(name="shown", title="Shown", description="d", security=[NOAUTH, oauth2("a.read")],
                   widget=WIDGET, invoking="Working…", invoked="Done", **HINTS)
    async def shown() -> Annotated[CallToolResult, Out]: ...

    @registry.tool(name="hidden", title="Hidden", description="d", security=[NOAUTH], widget=WIDGET,
                   visibility=["app"], idempotent=True, **HINTS)
    async def hidden() -> Annotated[CallToolResult, Out]: ...

    tools = _tools(registry)
    shown_meta, hidden_meta = tools["shown"].meta, tools["hidden"].meta
    assert shown_meta["ui"]["resourceUri"] == shown_meta["openai/outputTemplate"] == WIDGET.uri_for(
        "https://w.example.com")
    assert shown_meta["securitySchemes"] == [{"type": "noauth"}, {"type": "oauth2", "scopes": ["a.read"]}]
    assert shown_meta["openai/toolInvocation/invoking"] == "Working…"
    assert shown_meta["openai/widgetAccessible"] is True
    assert hidden_meta["ui"]["visibility"] == ["app"] and hidden_meta["openai/visibility"] == "private"
    annotations = tools["hidden"].annotations
    assert (annotations.read_only_hint, annotations.destructive_hint, annotations.open_world_hint,
            annotations.idempotent_hint) == (True, False, False, True)


def test_a_tool_name_declared_twice_is_refused_naming_both_declarations():
    registry = _registry()

    @registry.tool(name="twin", title="A", description="d", security=[NOAUTH], **HINTS)
    async def first() -> Annotated[CallToolResult, Out]: ...

    with pytest.raises(RegistryError) as refused:
        @registry.tool(name="twin", title="B", description="d", security=[NOAUTH], **HINTS)
        async def second() -> Annotated[CallToolResult, Out]: ...

    message = str(refused.value)
    assert message.startswith("tool 'twin' is declared twice")
    assert "first" in message and "second" in message
    assert registry.tool_names == ["twin"]


def test_two_different_widgets_with_one_name_are_refused():
    registry = _registry()
    other = Widget(name="demo", title="Demo 2", description="d", html_override="<p>other</p>")
    registry.tool(name="a", title="A", description="d", security=[NOAUTH], widget=WIDGET, **HINTS)(_out)
    with pytest.raises(RegistryError, match="another widget is already named 'demo'"):
        registry.tool(name="b", title="B", description="d", security=[NOAUTH], widget=other, **HINTS)


def test_a_refused_tool_leaves_no_widget_behind():
    registry = _registry()
    registry.tool(name="a", title="A", description="d", security=[NOAUTH], **HINTS)(_out)
    with pytest.raises(RegistryError, match="declared twice"):
        registry.tool(name="a", title="A", description="d", security=[NOAUTH], widget=WIDGET, **HINTS)(_out)
    assert anyio.run(registry.build().list_resources) == []


def test_an_app_only_tool_without_a_template_publishes_its_visibility_and_no_template():
    registry = _registry()
    registry.tool(name="t", title="T", description="d", security=[NOAUTH], visibility=["app"], **HINTS)(_out)
    meta = _tools(registry)["t"].meta
    assert meta["ui"] == {"visibility": ["app"]}
    assert meta["openai/visibility"] == "private" and meta["openai/widgetAccessible"] is True
    assert "openai/outputTemplate" not in meta


@pytest.mark.parametrize("visibility", [[], ["everyone"]])
def test_a_visibility_outside_model_and_app_is_refused(visibility):
    with pytest.raises(RegistryError, match="visibility must be a non-empty subset"):
        _registry().tool(name="t", title="T", description="d", security=[NOAUTH], visibility=visibility, **HINTS)


def test_a_widget_without_a_built_bundle_is_refused_with_the_build_command(monkeypatch, tmp_path):
    import app.mcp.widgets as widgets

    monkeypatch.setattr(widgets, "DIST", tmp_path)
    unbuilt = Widget(name="nowhere", title="N", description="d")
    with pytest.raises(RegistryError, match=r"t: widget 'nowhere' has no built bundle .*npm --prefix widgets"):
        _registry().tool(name="t", title="T", description="d", security=[NOAUTH], widget=unbuilt, **HINTS)


@pytest.mark.parametrize(
    ("security", "needle"),
    [([], "at least one security scheme"), ([{"type": "apiKey"}], "unknown security scheme type 'apiKey'"),
     ([{"type": "oauth2", "scopes": ["two words"]}], "scope names")],
)
def test_a_malformed_security_declaration_is_refused(security, needle):
    with pytest.raises(RegistryError, match=needle):
        _registry().tool(name="t", title="T", description="d", security=security, **HINTS)


def test_an_entrypoint_on_a_tool_the_host_cannot_call_that_way_is_refused():
    from app.mcp.entrypoints import OpenAIFileEntrypoint, OpenAIThreadEntrypoint

    async def needs(animal_id: str) -> Annotated[CallToolResult, Out]: ...

    with pytest.raises(RegistryError, match="a thread entrypoint calls the tool with {}, and it "
                                            "needs animal_id"):
        _registry().tool(name="t", title="T", description="d", security=[NOAUTH],
                         entrypoints=[OpenAIThreadEntrypoint()], **HINTS)(needs)
    with pytest.raises(RegistryError, match="a file entrypoint calls the tool with `file`"):
        _registry().tool(name="t", title="T", description="d", security=[NOAUTH],
                         entrypoints=[OpenAIFileEntrypoint(extensions=[".csv"])], **HINTS)(_out)


def test_a_quick_action_to_no_tool_is_refused_once_every_tool_is_declared(tmp_path):
    from app.mcp.entrypoints import OpenAIGlobalEntrypoint, quick_action

    icon = tmp_path / "go.svg"
    icon.write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    registry = _registry()
    registry.tool(name="t", title="T", description="d", security=[NOAUTH], **HINTS,
                  entrypoints=[OpenAIGlobalEntrypoint(quick_action=quick_action(
                      "Go", "later", icon))])(_out)
    with pytest.raises(RegistryError, match="t: its quick action calls 'later', which is no tool"):
        registry.complete()
    registry.tool(name="later", title="L", description="d", security=[NOAUTH], **HINTS)(_out)
    registry.complete()  # declared after the quick action that calls it: fine
    [entry] = _tools(registry)["t"].meta["openai/ui"]["entrypoints"]
    assert entry["quickAction"]["target"] == {"type": "tool", "name": "later"}
