"""What a feature raises when a call fails in a way it foresaw: the registry (``app.mcp.registry``) turns it
into the tool's ``isError`` result, so no feature builds or raises a protocol error itself.

A feature's own exception classes subclass ``ToolFailure``; its services raise them where the failure is known,
and the tool body lets them pass. Anything else a tool raises stays a bug: the caller learns only that the tool
failed, the log gets the traceback.
"""

from __future__ import annotations

from app.errors import ToolFailure

__all__ = ["ToolFailure"]
