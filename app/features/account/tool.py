"""``get_account_profile``: ``_meta["openai/profile"]``, read-only, no input, any linked account."""

from __future__ import annotations

from typing import Annotated

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.types import CallToolResult

from app.auth.schemes import oauth2
from app.feature import AccountProfile, Deps
from app.features.account.schemas import Profile
from app.mcp.errors import ToolFailure
from app.mcp.registry import ToolRegistry
from app.mcp.results import tool_result
from app.wording import Wording

say = Wording(__file__)


def register(registry: ToolRegistry, deps: Deps) -> None:
    db = deps.db
    # The built-in authorization server's accounts; None with an external IdP, whose subjects are not local
    # account ids (one could even look like one).
    accounts = deps.accounts

    @registry.tool(
        name="get_account_profile",
        title=say("Linked account"),
        description="The profile of the account linked to this app (id, name, email, user name). Use it to tell "
        "which account is connected when the user has several.",
        read_only=True,
        destructive=False,
        open_world=False,
        idempotent=True,
        # Any linked account may see who it is: no scope beyond the link itself.
        security=[oauth2()],
        meta={"openai/profile": True},
    )
    async def get_account_profile() -> Annotated[CallToolResult, Profile]:
        token = get_access_token()
        if token is None or not token.subject:
            # Unreachable: the registry enforces oauth2 first.
            raise ToolFailure(say("No linked account."))
        # Names of this scope, which the checks here narrow in the lambda below too.
        subject, local = token.subject, accounts
        profile = None
        if local is not None:
            profile = await db.read(lambda uow: _profile(local.profile(uow, subject)))
        if profile is None:  # an external IdP's subject: what its token tells
            claims = token.claims or {}
            profile = Profile(id=subject, name=_text(claims.get("name")),
                              email=_text(claims.get("email")),
                              nickname=_text(claims.get("preferred_username") or claims.get("nickname")))
        shown = profile.name or profile.nickname or profile.id
        return tool_result(profile, f"Linked account: {shown}" + (f" <{profile.email}>" if profile.email else "."))


def _profile(account: AccountProfile | None) -> Profile | None:
    if account is None:
        return None
    return Profile(id=account.id, name=account.display_name, email=account.email, nickname=account.username)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
