"""pydantic's validation errors in plain words, by error type: what a person setting a variable
(``app.settings``) or the model calling a tool (``app.mcp.arguments``) reads instead of pydantic's
wording ("Input should be greater than or equal to 300", "Field required", a link to its docs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# {name}s come from the error's context. A type missing here falls back to pydantic's message with
# "Input should be" said as "must be".
PLAIN = {
    "greater_than_equal": "must be {ge} or more",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be {le} or less",
    "less_than": "must be less than {lt}",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false (also yes/no, on/off, 1/0)",
    # A strict field (the settings' update) takes only true or false: no other form to offer.
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "string_too_short": "must be at least {min_length} characters long",
    "string_too_long": "must be at most {max_length} characters long",
    "string_pattern_mismatch": "is not in the expected form",
    "too_short": "must have at least {min_length} items",
    "too_long": "must have at most {max_length} items",
    "missing": "is required",
    "literal_error": "must be one of {expected}",
    "enum": "must be one of {expected}",
    "json_invalid": "must be valid JSON",
    "url_parsing": "must be a web address",
    "url_type": "must be a web address",
    "url_too_long": "must be a web address of at most {max_length} characters",
    "url_scheme": "must be a web address starting with {expected_schemes}",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "extra_forbidden": "is not expected here",
}


def plain_error(error: Mapping[str, Any]) -> str:
    """One pydantic error (``ValidationError.errors()``' item) in plain words, without the value."""
    raw = str(error.get("msg", "is not valid"))
    if raw.startswith("Value error, "):  # a validator's own words
        return raw.removeprefix("Value error, ")
    plain = PLAIN.get(str(error.get("type")))
    if plain is not None:
        try:
            said = plain.format(**(error.get("ctx") or {}))
        except (KeyError, IndexError):
            said = None
        if said is not None:  # one of a thing: "at least 1 character", "at most 1 item"
            return said.replace(" 1 characters", " 1 character").replace(" 1 items", " 1 item")
    return raw.replace("Input should be", "must be", 1)
