"""The account's settings composed from the features' groups (app/mcp/settings.py): what the
registry refuses at start-up, and how stored values meet a group that changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field

from app.mcp.registry import RegistryError, ToolRegistry
from app.mcp.settings import SettingsError, SettingsGroup, compose, filled


class Cafes(BaseModel):
    home_city: str = Field(default="", max_length=20, title="Home city", description="d")
    language: Literal["auto", "en"] = Field(default="auto", title="Language", description="d")


class Zoo(BaseModel):
    zoo_count: int = Field(default=10, ge=1, le=20, title="Animals", description="d")


class Store:
    """A fake store: one account's values in memory."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    async def read(self, subject: str) -> Mapping[str, Any]:
        return dict(self.values)

    async def update(self, subject: str, changes: Mapping[str, Any]) -> Mapping[str, Any]:
        self.values.update(changes)
        return dict(self.values)


def _registry() -> ToolRegistry:
    registry = ToolRegistry(widget_domain="https://w.example.com", name="t", title="T",
                            resource_metadata_url="https://m.example.com/.well-known/x")
    registry.settings_store = Store()
    return registry


def test_a_key_two_groups_declare_is_refused_naming_both():
    class Other(BaseModel):
        zoo_count: int = Field(default=3, title="Count", description="d")

    with pytest.raises(SettingsError, match="'zoo_count' is declared by two groups: 'Zoo' and "
                                            "'Other'"):
        compose([SettingsGroup("Zoo", Zoo), SettingsGroup("Other", Other)], Store())


@pytest.mark.parametrize("field,needle", [
    ((int, Field(title="Count", description="d")), "needs a default"),
    ((list[str], Field(default=[], title="Tags", description="d")), "Unsupported native setting"),
    ((int, Field(default=3)), "'odd' of group 'Odd' needs a title and a description"),
])
def test_a_setting_chatgpt_cannot_render_is_refused(field, needle):
    from pydantic import create_model

    odd = create_model("Odd", odd=field)
    with pytest.raises(SettingsError, match=needle):
        compose([SettingsGroup("Odd", odd)], Store())


def test_a_button_to_no_tool_is_refused_at_completion():
    registry = _registry()
    registry.settings_group(SettingsGroup("Files", actions=("list_files",)))
    with pytest.raises(RegistryError, match="its button calls 'list_files', which is no tool"):
        registry.complete()


def test_a_stored_value_the_group_no_longer_accepts_falls_back_alone():
    chosen = filled(Cafes, {"home_city": "x" * 30, "language": "en", "gone": 1})
    assert (chosen.home_city, chosen.language) == ("", "en")


def test_the_composed_schema_has_every_setting_required_and_no_default(monkeypatch):
    store = Store()
    declared = compose([SettingsGroup("Cafés", Cafes), SettingsGroup("Zoo", Zoo)], store)
    store.values = {"zoo_count": 4}
    monkeypatch.setattr("app.mcp.settings._subject", lambda: "acct_1")  # the token's subject
    result = anyio.run(declared.tools()["read_settings"], None)
    payload = result.structured_content
    assert payload["values"] == {"home_city": "", "language": "auto", "zoo_count": 4}
    assert sorted(payload["schema"]["required"]) == ["home_city", "language", "zoo_count"]
    assert all("default" not in p for p in payload["schema"]["properties"].values())
    assert payload["schema"]["properties"]["zoo_count"]["maximum"] == 20
    assert [g["title"] for g in payload["layout"]] == ["Cafés", "Zoo"]


def test_the_settings_tools_are_declared_with_a_linked_account_only():
    registry = _registry()
    registry.settings_group(SettingsGroup("Zoo", Zoo))
    registry.complete()
    tools = {t.name: t for t in anyio.run(registry.build().list_tools)}
    for name in ("read_settings", "update_settings"):
        assert tools[name].meta["securitySchemes"] == [{"type": "oauth2", "scopes": []}], name
    assert tools["read_settings"].annotations.read_only_hint is True
