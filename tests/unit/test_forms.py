"""The pieces of app/mcp/forms.py that need no server: which clients can be shown a form, and the
forms a tool may declare (OpenAI's form schema, checked when the question is declared, so that
``check`` and start-up refuse a form ChatGPT could not show)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from mcp.types import ClientCapabilities
from pydantic import BaseModel, Field

from app.mcp import forms
from app.mcp.forms import FormError, Question, can_ask, option, picker, picker_many

FORM = {"elicitation": {"form": {}}, "extensions": {"openai/elicitation": {"form": {}}}}


class Title(BaseModel):
    title: str = Field(min_length=1, title="Title")


def _question(form: type[BaseModel]) -> Question[Any]:
    return Question(key="k", message="m", form=form, needs="n", instead="i", declined="d")


@pytest.mark.parametrize("version,capabilities,shown", [
    ("2026-07-28", FORM, True),
    ("2025-11-25", FORM, False),  # no input_required on the wire
    ("2026-07-28", {"elicitation": {"form": {}}}, False),  # not OpenAI's form
    ("2026-07-28", {"extensions": {"openai/elicitation": {"form": {}}}}, False),
    ("2026-07-28", {"elicitation": {"form": {}}, "extensions": {"openai/elicitation": {}}}, False),
    ("2026-07-28", None, False),
])
def test_a_form_is_shown_only_to_a_2026_client_with_both_form_capabilities(version, capabilities,
                                                                            shown):
    caps = ClientCapabilities.model_validate(capabilities) if capabilities is not None else None
    ctx: Any = SimpleNamespace(protocol_version=version, client_capabilities=caps)
    assert can_ask(ctx) is shown


def test_a_form_openai_cannot_show_is_refused_when_the_question_is_declared():
    class Nested(BaseModel):
        limits: dict[str, int]

    with pytest.raises(FormError) as refused:
        _question(Nested)
    assert str(refused.value).startswith("form Nested is not an OpenAI form: properties.limits")
    assert "Input should be" not in str(refused.value)
    _question(Title)  # a plain text field is one


def test_pickers_offer_the_items_by_uri_and_pick_one_or_several():
    options = [option("app://recipes/r1", "r1", "Soup"),
               option("app://files/f1", "a.png", "a.png", thumbnail="https://x.example/a.png")]
    one = forms.schema(picker(options, title="Item", description="Which"))
    assert one["properties"]["choice"]["format"] == "uri"
    assert [o["uri"] for o in one["properties"]["choice"]["x-openai-input"]["options"]] == [
        "app://recipes/r1", "app://files/f1"]
    several = forms.schema(picker_many(options, least=2, most=2, title="Items", description="d"))
    field = several["properties"]["choices"]
    assert (field["minItems"], field["maxItems"], field["uniqueItems"]) == (2, 2, True)
    assert field["x-openai-input"]["selection"] == "explicit"
    assert field["x-openai-input"]["options"][1]["_meta"] == {
        "openai/thumbnail": {"src": "https://x.example/a.png"}}
