"""What OpenAI's app directory reads from the server itself when an app is submitted: the
domain verification token (docs/submission.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

CHALLENGE_PATH = "/.well-known/openai-apps-challenge"


def directory_routes(challenge: str | None) -> list[Route]:
    """``GET /.well-known/openai-apps-challenge``: ``challenge`` (APP_OPENAI_APPS_CHALLENGE) as
    plain text, or the 404 of an unknown path while it is unset."""

    async def verify(_: Request) -> PlainTextResponse:
        if challenge is None:
            return PlainTextResponse("Not Found", status_code=404)
        # Read once by the platform when it checks: never from a cache that outlived a new token.
        return PlainTextResponse(challenge, headers={"cache-control": "no-store"})

    return [Route(CHALLENGE_PATH, verify, methods=["GET"])]
