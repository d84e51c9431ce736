"""pydantic's validation errors in plain words, by error type: what a person setting a variable
(``app.settings``) or the model calling a tool (``app.mcp.arguments``) reads instead of pydantic's
wording ("Input should be greater than or equal to 300", "Field required", a link to its docs)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.wording import Wording, language, placeholders

say = Wording(__file__)

# {name}s come from the error's context. A type missing here falls back to pydantic's message with
# "Input should be" said as "must be".
PLAIN = {
    "greater_than_equal": say.mark("must be {ge} or more"),
    "greater_than": say.mark("must be more than {gt}"),
    "less_than_equal": say.mark("must be {le} or less"),
    "less_than": say.mark("must be less than {lt}"),
    "int_parsing": say.mark("must be a whole number"),
    "int_type": say.mark("must be a whole number"),
    "int_from_float": say.mark("must be a whole number"),
    "float_parsing": say.mark("must be a number"),
    "float_type": say.mark("must be a number"),
    "bool_parsing": say.mark("must be true or false (also yes/no, on/off, 1/0)"),
    # A strict field (the settings' update) takes only true or false: no other form to offer.
    "bool_type": say.mark("must be true or false"),
    "string_type": say.mark("must be text"),
    "string_too_short": say.mark("must be at least {min_length} characters long"),
    "string_too_long": say.mark("must be at most {max_length} characters long"),
    "string_pattern_mismatch": say.mark("is not in the expected form"),
    "too_short": say.mark("must have at least {min_length} items"),
    "too_long": say.mark("must have at most {max_length} items"),
    "missing": say.mark("is required"),
    "literal_error": say.mark("must be one of {expected}"),
    "enum": say.mark("must be one of {expected}"),
    "json_invalid": say.mark("must be valid JSON"),
    "url_parsing": say.mark("must be a web address"),
    "url_type": say.mark("must be a web address"),
    "url_too_long": say.mark("must be a web address of at most {max_length} characters"),
    "url_scheme": say.mark("must be a web address starting with {expected_schemes}"),
    "list_type": say.mark("must be a list"),
    "dict_type": say.mark("must be an object"),
    "model_type": say.mark("must be an object"),
    "model_attributes_type": say.mark("must be an object"),
    "extra_forbidden": say.mark("is not expected here"),
    "uuid_parsing": say.mark("must be a UUID"),
    "uuid_type": say.mark("must be a UUID"),
    "date_parsing": say.mark("must be a date (YYYY-MM-DD)"),
    "date_from_datetime_parsing": say.mark("must be a date (YYYY-MM-DD)"),
    "date_type": say.mark("must be a date (YYYY-MM-DD)"),
    "datetime_parsing": say.mark("must be a date and time"),
    "datetime_from_date_parsing": say.mark("must be a date and time"),
    "datetime_type": say.mark("must be a date and time"),
}
# One of a thing: "at least 1 character", not "1 characters".
ONE = {
    "string_too_short": ("min_length", say.mark("must be at least 1 character long")),
    "string_too_long": ("max_length", say.mark("must be at most 1 character long")),
    "too_short": ("min_length", say.mark("must have at least 1 item")),
    "too_long": ("max_length", say.mark("must have at most 1 item")),
}


def plain_error(error: Mapping[str, Any]) -> str:
    """One pydantic error (``ValidationError.errors()``' item) in plain words, without the value;
    in the request's language where it is said to a person (``app.wording``)."""
    raw = str(error.get("msg", "is not valid"))
    if raw.startswith("Value error, "):  # a validator's own words
        return raw.removeprefix("Value error, ")
    kind = str(error.get("type"))
    context = error.get("ctx") or {}
    if kind in ONE and context.get(ONE[kind][0]) == 1:
        return say(ONE[kind][1])
    plain = PLAIN.get(kind)
    if plain is not None and placeholders(plain) <= context.keys():
        values = {name: context[name] for name in placeholders(plain)}
        if kind in ("literal_error", "enum"):
            values["expected"] = _choices(str(values["expected"]))
        return say(plain, **values)
    if language() != "en":  # pydantic's English has no place in another language's sentence
        return say("is not valid")
    return raw.replace("Input should be", "must be", 1)


def _choices(expected: str) -> str:
    """pydantic's list of the allowed values ("'a', 'b' or 'c'", its "or" English) with the "or"
    said in the request's language. The values are the schema's own literals, none of them
    holding " or "."""
    items, separator, last = expected.rpartition(" or ")
    return say("{items} or {last}", items=items, last=last) if separator else expected
