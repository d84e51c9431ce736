"""ChatGPT's structured settings (openai/mcp-extensions docs/spec.md, "Settings"), per account.

Each feature declares its own group (``registry.settings_group``): a pydantic model whose fields
are its settings, each with the default that applies until the person chooses, a title and a
description; and, if it likes, buttons that call one of its tools with ``{}``. The registry
composes the groups into the one schema the host renders and declares ``read_settings`` and
``update_settings`` through itself, with the handlers and result models of OpenAI's
``openai-mcp-extensions`` (``OpenAISettings``), so that both tools keep their schemes (a linked
account), logs, budgets and ``check`` like any other. Where the values are kept is the
``SettingsStore`` the composition root gives (``app.preferences``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.types import TextContent
from openai_mcp_extensions import (
    OpenAISettings,
    OpenAISettingsCapability,
    OpenAISettingsGroup,
    OpenAISettingsProperty,
    OpenAISettingsTool,
)
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from app.mcp.errors import ToolFailure
from app.plain import plain_error
from app.preferences.values import filled
from app.wording import Wording

say = Wording(__file__)
SETTINGS_CAPABILITY = "openai/settings"
READ_TOOL = "read_settings"
UPDATE_TOOL = "update_settings"
MAX_KEY = 64  # the preferences table's key column


class SettingsError(ValueError):
    """Groups that cannot make one schema (refused at start-up and by ``check``)."""


class Buttons(BaseModel):
    """A group of buttons only (no settings of its own)."""


@dataclass(frozen=True)
class SettingsGroup:
    """One feature's section of the settings. ``model``: its settings, each field with a default,
    a ``title`` and a ``description`` (a boolean, a string, a string ``Literal``, a number or an
    integer: what ChatGPT renders). ``actions``: tools of the same server a button in the section
    calls with ``{}`` (e.g. the person's files)."""

    title: str
    model: type[BaseModel] = Buttons
    actions: Sequence[str] = ()


class SettingsStore(Protocol):
    """Where each account's choices are kept (``app.preferences.Preferences``)."""

    async def read(self, subject: str) -> Mapping[str, Any]:
        """Everything ``subject`` stored, by setting (a key no group declares is ignored)."""
        ...

    async def update(self, subject: str, changes: Mapping[str, Any]) -> Mapping[str, Any]:
        """Store ``changes`` (validated) for ``subject`` before returning everything it stored."""
        ...


@dataclass(frozen=True)
class DeclaredSettings:
    """What the groups compose to: the library's extension (tools, capability), ready to declare."""

    extension: OpenAISettings[Any]
    groups: tuple[SettingsGroup, ...]

    @property
    def titles(self) -> dict[str, str]:
        """Each setting's title, by key."""
        return {key: info.title or key for group in self.groups
                for key, info in group.model.model_fields.items()}

    @property
    def capability(self) -> dict[str, Any]:
        return OpenAISettingsCapability(read_tool=READ_TOOL, update_tool=UPDATE_TOOL).model_dump(
            by_alias=True)

    def tools(self) -> dict[str, Callable[..., Any]]:
        """The library's read and update handlers, by tool name."""
        return {binding.kwargs["name"]: binding.fn for binding in self.extension.tools()}


def compose(groups: Sequence[SettingsGroup], store: SettingsStore) -> DeclaredSettings:
    """One schema of every group's settings, its layout (a section per group), and the handlers
    reading and writing the caller's values through ``store``."""
    fields: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for group in groups:
        for key, info in group.model.model_fields.items():
            if key in owner:
                raise SettingsError(f"setting {key!r} is declared by two groups: {owner[key]!r} "
                                    f"and {group.title!r}")
            if info.is_required():
                raise SettingsError(f"setting {key!r} of group {group.title!r} needs a default "
                                    "(what applies until the person chooses)")
            if len(key) > MAX_KEY:
                raise SettingsError(f"setting {key[:MAX_KEY]}... of group {group.title!r}: a key "
                                    f"holds at most {MAX_KEY} characters")
            if not info.title or not info.description:
                raise SettingsError(f"setting {key!r} of group {group.title!r} needs a title and a "
                                    "description (what the person reads beside it)")
            owner[key] = group.title
            # Required and without its default: the host's schema has a value for every property
            # (the library refuses schema defaults), the defaults are filled in here.
            fields[key] = (Annotated[info.annotation, *info.metadata, Field(
                title=info.title, description=info.description)], ...)
    values = create_model("Settings", __config__=ConfigDict(extra="forbid"), **fields)
    layout = [OpenAISettingsGroup(title=group.title, items=[
        *(OpenAISettingsProperty(property=key) for key in group.model.model_fields),
        *(OpenAISettingsTool(tool=action) for action in group.actions)]) for group in groups]
    try:
        extension: OpenAISettings[Any] = OpenAISettings(
            schema=values, read_tool=READ_TOOL, update_tool=UPDATE_TOOL, layout=layout)
    except ValueError as exc:  # the library's own word on a setting ChatGPT cannot render
        raise SettingsError(str(exc).splitlines()[0]) from None

    def current(stored: Mapping[str, Any]) -> BaseModel:
        chosen: dict[str, Any] = {}
        for group in groups:
            chosen.update(filled(group.model, stored).model_dump())
        return values.model_validate(chosen)

    @extension.read
    async def read(_: Any) -> BaseModel:
        return current(await store.read(_subject()))

    @extension.update
    async def update(changes: dict[str, Any], _: Any) -> BaseModel:
        # Each section's own rules (its validators too, which the composed schema has not kept)
        # judge its part of the change before anything is stored.
        for group in groups:
            part = {k: v for k, v in changes.items() if k in group.model.model_fields}
            for key, value in part.items():
                try:
                    group.model.model_validate({key: value})
                except ValidationError as exc:
                    said = plain_error(exc.errors()[0])
                    raise ToolFailure(say("{setting} was not changed: {problem}.",
                                          setting=group.model.model_fields[key].title or key,
                                          problem=said),
                                      f"Call update_settings again with another value of "
                                      f"`{key}`.") from None
        return current(await store.update(_subject(), changes))

    return DeclaredSettings(extension, tuple(groups))


def _said(values: Mapping[str, Any], keys: Sequence[str], titles: Mapping[str, str]) -> str:
    said = ((key, json.dumps(values.get(key), ensure_ascii=False)) for key in keys)
    return "; ".join(f"{titles.get(key, key)} ({key}): {value}" for key, value in said)


def read_in_words(read: Callable[..., Any], titles: Mapping[str, str]) -> Callable[..., Any]:
    """The library's read handler, its result said in a text block too (it leaves ``content``
    empty: a model reading the transcript would see nothing)."""

    @functools.wraps(read)
    async def described(*args: Any, **kwargs: Any) -> Any:
        result = await read(*args, **kwargs)
        values = (result.structured_content or {}).get("values", {})
        result.content = [TextContent(type="text", text="The user's settings for this app: "
                                      + _said(values, list(values), titles) + ".")]
        return result

    return described


def update_in_words(update: Callable[..., Any], titles: Mapping[str, str]) -> Callable[..., Any]:
    """The library's update handler, told in words when nothing is to change (it raises a bare
    ``ValueError``, which would reach the person as the SDK's wording), and what it saved said
    in a text block."""

    @functools.wraps(update)
    async def described(*args: Any, **kwargs: Any) -> Any:
        changes = kwargs.get("set", args[0] if args else None)
        changed = sorted(changes.model_fields_set) if isinstance(changes, BaseModel) else []
        if not changed:
            raise ToolFailure(say("Nothing was changed: no setting was given."),
                              "Call update_settings with `set` holding the settings to change "
                              "(read_settings lists them).")
        result = await update(*args, **kwargs)
        values = (result.structured_content or {}).get("values", {})
        result.content = [TextContent(type="text", text="Saved: " + _said(
            values, changed, titles) + ".")]
        return result

    return described


def _subject() -> str:
    token = get_access_token()
    if token is None or not token.subject:  # unreachable: the registry enforces oauth2 first
        raise ToolFailure(say("Settings are kept per account, and no account is linked."),
                          "Ask the user to connect (sign in to) this app, then try again.")
    return token.subject
