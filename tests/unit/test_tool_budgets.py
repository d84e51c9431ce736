"""How a tool call is charged and what the model is told when it is over: units from the arguments (sent
before they are validated), shared budgets, and the refusal's words."""

from __future__ import annotations

import pytest

from app.auth.schemes import NOAUTH
from app.limits import Budget, Check, OverLimit, parse_rate, retry_phrase
from app.main import FeatureError, tool_charges
from app.mcp.budgets import Charge, ToolBudget, over_budget
from app.mcp.registry import RegistryError, ToolRegistry
from app.settings import load_settings

FILES = Budget("tool.files", parse_rate("6/10 minutes"))


def items_in(arguments) -> int:
    return len(arguments["items"])  # as a careless cost function would: it may raise


@pytest.mark.parametrize(("arguments", "units"), [
    ({"items": [{}, {}, {}]}, 3), ({"items": 7}, 1), ({}, 1), (None, 1), ("junk", 1), ({"items": []}, 1),
    ({"items": [{}] * 5000}, 1000),  # never more than MAX_COST, whatever is sent
])
def test_units_come_from_the_arguments_as_sent_and_never_fail(arguments, units: int):
    assert Charge(FILES, items_in).units(arguments) == units


def test_a_cost_function_that_raises_charges_one_unit():
    assert Charge(FILES, lambda arguments: 1 // 0).units({"files": []}) == 1


def refused(cost: int, amount: int = 6) -> OverLimit:
    return OverLimit(Check("tool.files", parse_rate(f"{amount}/10 minutes"), "k", "this caller", cost), 300)


def test_the_refusal_names_the_shared_budget_and_what_the_call_needs():
    text = over_budget("compare_files", "files", refused(2))["content"][1]["text"]
    assert text.startswith("compare_files was not run: this caller used its files budget (6 per 10 minutes) "
                           "(this call needs 2). Retry in 5 min (at ")
    own = over_budget("search", "search", refused(1))["content"][1]["text"]
    assert own.startswith("search was not run: this caller used its budget (6 per 10 minutes). Retry in")


def test_an_anonymous_caller_is_told_that_signing_in_gives_a_budget_of_its_own():
    anonymous = over_budget("search", "search", refused(1), anonymous=True)["content"][1]["text"]
    assert anonymous.endswith("Connecting (signing in to) this app gives the user a budget of their own.")
    assert "signing in" not in over_budget("search", "search", refused(1))["content"][1]["text"]


def test_a_call_that_could_never_fit_is_told_to_ask_for_less_not_to_retry():
    text = over_budget("compare_files", "files", refused(5, amount=4))["content"][1]["text"]
    assert text == ("compare_files was not run: this call needs 5 units and this caller may use at most "
                    "4 per 10 minutes of its files budget. Ask for less at once (fewer files).")
    assert over_budget("t", "t", refused(5, amount=4))["isError"] is True


def registry_with(*declarations: tuple[str, object]) -> ToolRegistry:
    registry = ToolRegistry(widget_domain="https://w.example", resource_metadata_url="https://r.example/prm",
                            name="test-server", title="Test Server")
    for name, budget in declarations:
        @registry.tool(name=name, title=name, description=name, read_only=True, destructive=False, open_world=False,
                       security=[NOAUTH], budget=budget)
        async def tool() -> str:
            return "ok"
    return registry


def test_tools_naming_one_budget_share_it_and_settings_change_it_by_that_name():
    registry = registry_with(("a", ToolBudget("6/10 minutes", "files")), ("b", ToolBudget("6/10 minutes", "files")),
                             ("c", None))
    charges = tool_charges(registry, load_settings(_env_file=None))
    assert {t: (c.budget.name, c.budget.rate.amount) for t, c in charges.items()} == {
        "a": ("tool.files", 6), "b": ("tool.files", 6)}
    changed = tool_charges(registry, load_settings(tool_budgets="files=9/minute,c=2/minute", _env_file=None))
    assert {t: (c.budget.name, c.budget.rate.amount) for t, c in changed.items()} == {
        "a": ("tool.files", 9), "b": ("tool.files", 9), "c": ("tool.c", 2)}
    assert tool_charges(registry, load_settings(tool_budgets="files=off", _env_file=None)) == {}


def test_a_budget_setting_that_names_nothing_stops_the_server_with_the_names_it_knows():
    registry = registry_with(("a", ToolBudget("6/10 minutes", "files")))
    with pytest.raises(FeatureError, match=r"APP_TOOL_BUDGETS names no budget or tool: a \(budgets: files\)"):
        tool_charges(registry, load_settings(tool_budgets="a=1/minute", _env_file=None))


def test_tools_sharing_a_budget_must_agree_on_its_rate():
    registry = registry_with(("a", ToolBudget("6/10 minutes", "files")), ("b", ToolBudget("7/10 minutes", "files")))
    with pytest.raises(FeatureError, match="sharing budget 'files' declare different rates"):
        tool_charges(registry, load_settings(_env_file=None))


def test_a_budget_that_is_not_a_rate_is_refused_where_the_tool_is_declared():
    with pytest.raises(RegistryError, match="a: budget 'lots' is not a rate"):
        registry_with(("a", "lots"))


def test_the_person_reads_what_happened_and_the_model_what_to_do():
    content = over_budget("search", "search", refused(1))["content"]
    assert [(c["text"], c["annotations"]["audience"]) for c in content[:1]] == [
        (f"This was not done: too many requests for now. Try again in {retry_phrase(300)}.",
         ["user", "assistant"])]
    assert content[1]["annotations"] == {"audience": ["assistant"]}
    assert content[1]["text"].startswith("search was not run: ")
    too_big = over_budget("compare_files", "files", refused(5, amount=4))["content"][0]["text"]
    assert too_big == "This was not done: it asks for more at once than is allowed."
