"""The one error the outbound guard raises, whatever step of a fetch refused or failed."""

from __future__ import annotations

from app.wording import Wording

# The reasons are told to a person whose file could not be fetched (app/features/files), in the
# language of their request: each is said here in English and translated from wording.json.
say = Wording(__file__)
TOTAL_TIMEOUT = say.mark("total timeout exceeded")

# What went wrong, for callers that word it for their users: the URL itself (scheme, syntax, redirects), where it
# leads (a non-public address), the size cap, a deadline, or the network (DNS, connection, HTTP framing).
REFUSAL_KINDS = ("url", "address", "size", "timeout", "network")


class OutboundRefused(Exception):
    """The URL or where it leads is not allowed / failed; str(exc) is one safe line naming the host and the reason
    (never the full URL query string); ``kind`` is one of REFUSAL_KINDS."""

    def __init__(self, message: str, *, host: str = "", reason: str = "", kind: str = "url",
                 detail: str = "") -> None:
        super().__init__(message)
        self.host = host
        self.reason = reason or message
        self.kind = kind
        self.detail = detail


def refused(host: str, reason: str, kind: str = "url", detail: str = "") -> OutboundRefused:
    """``reason``: the server's words (a person may read them); ``detail``: what the system or a
    library said (an OS error, TLS's), for the operator's log only."""
    line = f"outbound fetch to {host or '?'} refused: {reason}" + (f" ({detail})" if detail else "")
    return OutboundRefused(line, host=host, reason=reason, kind=kind, detail=detail)
