"""The test-only ``probe`` feature the probe server (tests/e2e/probe_server.py) serves beside the discovered ones:
``probe_count`` (anyone: reads the migrations' version table, which every fork has, so each call goes through a
worker's database connection),
``probe_echo`` (anyone: answers with what it was sent, at most 1,000 characters), ``probe_card`` and its
app-only ``probe_card_details`` (a widget of its own, inline HTML), and ``probe_notes`` (anyone, and more
for a token with ``probe.read``); ``probe_fetch`` (anyone: fetches a URL through the outbound guard, keeps
the bytes in storage and reads the version table: one call that reaches every layer a trace follows), and
``probe_link`` (a download link for what it kept) and ``probe_sleep`` (a request that stays in
flight);
``probe_confirm`` (asks the user to confirm first: an ``input_required`` result whose state the
server
seals, and which names the process that asked and the one that answered).
"""

from __future__ import annotations

import json
import os
from typing import Annotated

import anyio
import structlog
from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
)
from pydantic import BaseModel, Field
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.auth.resource_server import current_subject
from app.auth.schemes import NOAUTH, oauth2
from app.auth.scopes import Scope
from app.feature import Deps, Feature
from app.mcp.registry import ToolRegistry
from app.mcp.results import tool_result
from app.mcp.widgets import Widget

log = structlog.get_logger("tests.probe")
PROBE_WIDGET = Widget(name="probe", title="Probe card", description="Shows the probe's card.",
                      html_override="<!doctype html><html><head><title>probe</title></head>"
                                    "<body><main id='root'></main></body></html>")


class Count(BaseModel):
    versions: int


class Echo(BaseModel):
    text: str


class Card(BaseModel):
    card_id: str


class Notes(BaseModel):
    notes: list[str]


class Kept(BaseModel):
    status: int
    size: int
    versions: int
    key: str


class Link(BaseModel):
    url: str


class Slept(BaseModel):
    slept_ms: int


class Confirmed(BaseModel):
    text: str
    confirmed: bool


CONFIRM_SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


class VersionCount:
    def __init__(self, session: Session) -> None:
        self.session = session

    def count(self) -> int:
        return self.session.scalar(text("SELECT count(*) FROM alembic_version"))


def _tools(registry: ToolRegistry, deps: Deps) -> None:
    common = dict(read_only=True, destructive=False, open_world=False, security=[NOAUTH])

    @registry.tool(name="probe_count", title="Count versions",
                   description="Test-only: how many migration heads the database is at", **common)
    async def probe_count() -> Annotated[CallToolResult, Count]:
        n = await deps.db.read(lambda uow: uow.repository(VersionCount).count())
        return tool_result(Count(versions=n), f"{n} versions")

    @registry.tool(name="probe_echo", title="Echo", description="Test-only: answers with its input", **common)
    async def probe_echo(text: Annotated[str, Field(max_length=1000)]) -> Annotated[CallToolResult, Echo]:
        return tool_result(Echo(text=text), text)

    @registry.tool(name="probe_card", title="Probe card", description="Test-only: a card in a widget",
                   widget=PROBE_WIDGET, **common)
    async def probe_card() -> Annotated[CallToolResult, Card]:
        return tool_result(Card(card_id="c1"), "a card", {"cardsById": {"c1": {"shade": "green"}}})

    @registry.tool(name="probe_card_details", title="Probe card details", description="Test-only: the widget's "
                   "own call", widget=PROBE_WIDGET, visibility=["app"], **common)
    async def probe_card_details(card_id: str) -> Annotated[CallToolResult, Card]:
        return tool_result(Card(card_id=card_id), card_id)

    @registry.tool(name="probe_fetch", title="Fetch and keep", description="Test-only: fetches a URL through the "
                   "outbound guard, keeps its bytes in storage and counts the versions", read_only=False,
                   destructive=False, open_world=True, security=[NOAUTH])
    async def probe_fetch(url: str) -> Annotated[CallToolResult, Kept]:
        fetched = await deps.guard.fetch(url)  # one span per request (app.net.guard)
        stored = await deps.storage.put_bytes(fetched.body)  # S3 spans (botocore) with APP_STORAGE_BACKEND=s3
        n = await deps.db.read(lambda uow: uow.repository(VersionCount).count())  # a SQL span
        return tool_result(Kept(status=fetched.status, size=len(fetched.body), versions=n, key=stored.key), "kept")

    @registry.tool(name="probe_link", title="Download link", description="Test-only: a download link for what "
                   "probe_fetch kept", **common)
    async def probe_link(key: Annotated[str, Field(max_length=512)]) -> Annotated[CallToolResult, Link]:
        url = await deps.storage.download_url(key, file_name="kept.bin", content_type="application/octet-stream",
                                              ttl=60)
        return tool_result(Link(url=url), url)

    @registry.tool(name="probe_sleep", title="Sleep", description="Test-only: answers after this many "
                   "milliseconds (a request in flight)", **common)
    async def probe_sleep(ms: Annotated[int, Field(ge=0, le=10_000)]) -> Annotated[CallToolResult, Slept]:
        log.info("probe.sleeping", ms=ms)  # the request is in: what a test waits for before stopping the server
        await anyio.sleep(ms / 1000)
        return tool_result(Slept(slept_ms=ms), f"slept {ms} ms")

    @registry.tool(name="probe_notes", title="Probe notes", description="Test-only: more for a linked account",
                   read_only=True, destructive=False, open_world=False, security=[NOAUTH, oauth2("probe.read")])
    async def probe_notes() -> Annotated[CallToolResult, Notes]:
        subject = current_subject("probe.read")
        return tool_result(Notes(notes=[f"note of {subject}"] if subject else []), "notes")


def _asking(registry: ToolRegistry, deps: Deps) -> None:
    @registry.tool(
        name="probe_confirm",
        title="Confirm",
        description="Test-only: asks the user to confirm "
        "(an input_required result, its state sealed) before it answers",
        read_only=True,
        destructive=False,
        open_world=False,
        security=[NOAUTH],
    )
    async def probe_confirm(text: Annotated[str, Field(max_length=100)],
                            ctx: Context) -> Annotated[CallToolResult, Confirmed]:
        answer = (ctx.input_responses or {}).get("confirm")
        if not isinstance(answer, ElicitResult) or ctx.request_state is None:
            asked = ElicitRequest(params=ElicitRequestFormParams(message=f"Confirm {text}?",
                                                                 requested_schema=CONFIRM_SCHEMA))
            return InputRequiredResult(
                input_requests={"confirm": asked},  # type: ignore[return-value]
                request_state=json.dumps({"asked": text, "pid": os.getpid()}),
            )
        state = json.loads(ctx.request_state)
        confirmed = answer.action == "accept" and bool((answer.content or {}).get("ok"))
        return tool_result(Confirmed(text=state["asked"], confirmed=confirmed),
                           f"{state['asked']}: {'confirmed' if confirmed else 'not confirmed'} "
                           f"(asked by {state['pid']}, answered by {os.getpid()})")


def _all_tools(registry: ToolRegistry, deps: Deps) -> None:
    _tools(registry, deps)
    _asking(registry, deps)


PROBE = Feature(
    name="probe", tools=_all_tools, scopes=(Scope("probe.read", {"en": "Read the probe's notes"}),)
)
