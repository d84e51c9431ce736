"""What any layer raises when a call fails in a way it foresaw (``ToolFailure``): the MCP registry
(``app.mcp.registry``) turns it into the tool's ``isError`` result. Here, below every layer, so that
the auth layer (``app.auth.resource_server.linked_account``) and the features raise the same thing;
``app.mcp.errors`` is where features import it from."""

from __future__ import annotations


class ToolFailure(Exception):
    """A foreseen failure, told twice: ``message`` for the person, ``advice`` for the model.

    ``message`` is short and says what happened; a widget shows it (the result's first text block).
    ``advice`` tells the model what to do next (ask the user, call another tool, retry later); it is a
    second text block, which the model reads and widgets leave out. A subclass may set ``advice`` once
    as a class attribute when it never depends on the call.
    """

    advice: str = ""

    def __init__(self, message: str, advice: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if advice is not None:
            self.advice = advice
