"""What no error result may say: the SDK's and pydantic's own wording ("Error executing tool",
"1 validation error for ...", "Field required", a link to pydantic's docs), which neither the person
nor the model should read (app/mcp/arguments.py, app/mcp/middleware.py OutputGuard).

tests/conftest.py holds every ``tools/call`` the suite makes through the SDK's ``Client`` to it, and
the suite's HTTP helpers (``tests/e2e/oauth_client.call_tool``, the forms tests) call
``assert_readable``: an error result in library wording fails the test that received it. A test
that talks to the registry's bare SDK server (no middleware: the wording is the SDK's by design)
is marked ``sdk_wording``."""

from __future__ import annotations

import re
from typing import Any

LIBRARY_WORDING = re.compile(
    r"Error executing tool|validation errors? for |Field required|For further information visit"
    r"|errors\.pydantic\.dev|\[type=\w+|Input should be")


def library_wording(result: Any) -> str | None:
    """The first text of an error result (a ``CallToolResult`` or its JSON) in library wording."""
    if result is None:
        return None
    if not isinstance(result, dict):
        result = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not result.get("isError"):
        return None
    for block in result.get("content") or ():
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str) and LIBRARY_WORDING.search(text):
            return text
    return None


def assert_readable(result: Any) -> None:
    found = library_wording(result)
    assert found is None, f"an error result in a library's words: {found!r}"
