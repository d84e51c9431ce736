"""Questions a tool asks the person as forms, instead of failing: OpenAI form elicitation
(openai/mcp-extensions ``docs/spec.md``, "OpenAI Form Elicitation") over the multi-round-trip
requests of MCP 2026-07-28, through OpenAI's own ``openai-mcp-extensions``.

A tool body asks in one line and gets the validated answer::

    title = ask(ctx, TITLE).title

The first time, ``ask`` raises ``Asking``: the registry answers the call with the
``input_required`` result (the form rides in ``_meta["openai/elicitation"]``, put back by
``OpenAIExtensions.middleware``, which the registry installs). Its ``requestState`` names the
question; the SDK seals it (``APP_REQUEST_STATE_KEYS``: any replica opens it) and binds it to the
caller's account and to the call's arguments, so a state from another account or another call is
refused before any tool runs.
ChatGPT calls again with the person's answer: ``ask`` returns it, validated against the form (a
picker's choice must be one of the options offered to this account).

Where no form can be shown (MCP before 2026-07-28, or a client that lacks ``elicitation.form``
or ``extensions["openai/elicitation"].form``) the call ends with an ``isError`` result telling
the model what to ask the person and which argument to fill (``Question.instead``). A declined or
closed form ends the call with what the person reads (``Question.declined``) and advice for the
model. ``Asking`` must reach the registry: never wrap ``ask`` in ``except Exception``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from mcp.server.elicitation import AcceptedElicitation
from mcp.server.mcpserver import Context
from mcp.types import InputRequiredResult, Resource
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from openai_mcp_extensions import OpenAIExtensions
from openai_mcp_extensions.form import resource_input
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema, create_model

from app.mcp.errors import ToolFailure
from app.plain import plain_error
from app.wording import Said, Wording, in_language, language

M = TypeVar("M", bound=BaseModel)
say = Wording(__file__)
# The client capability the form needs, beside the standard elicitation.form (docs/spec.md).
FORM_EXTENSION = "openai/elicitation"
STATE_PREFIX = "form:"  # requestState: the question's key after it, nothing else
MAX_ANSWERED = 5  # choices read back from an answer (the largest picker takes 5)
MAX_URI = 200

# What the model reads after a form the person declined or closed.
DECLINED_ADVICE = ("The user chose not to answer the form, so nothing was done: do not call this "
                   "tool again for it unless the user asks to.")
UNFIT_ADVICE = ("Call the tool again with the same arguments to ask the user again (the choices "
                "offered may have changed).")
UNSEALED_ADVICE = ("Call the tool again without inputResponses: the user will be asked again, and "
                   "the answer must come back with the requestState of that question.")


class FormError(ValueError):
    """A question whose form OpenAI's form schema does not allow (said at start-up, and by
    ``check``)."""


class Asking(Exception):  # noqa: N818 (not an error: the call's answer is a question)
    """Raised by ``ask`` the first time: the registry answers the call with ``result``."""

    def __init__(self, result: InputRequiredResult) -> None:
        super().__init__("input required")
        self.result = result


@dataclass(frozen=True)
class Question(Generic[M]):
    """Something only the person can tell a tool, and what happens where they cannot be asked.

    - ``key``: names the answer in ``inputResponses`` and the sealed state;
    - ``message``: the form's heading, for the person;
    - ``form``: its fields (a pydantic model: titles, descriptions, suggestions, a picker);
    - ``needs``: what the person reads where no form can be shown ("Saving a recipe needs its
      title.");
    - ``instead``: what the model does then: the question to ask, the argument to fill;
    - ``declined``: what the person reads after declining or closing the form ("Nothing was
      saved.").
    """

    key: str
    message: str
    form: type[M]
    needs: str
    instead: str
    declined: str

    def __post_init__(self) -> None:
        # A form OpenAI's schema refuses is refused as the tool is declared (start-up, check) and
        # as a call builds its options (with_form), before anything is sent.
        schema(self.form)

    def with_form(self, form: type[M]) -> Question[M]:
        """The same question with fields made for this call (a picker's options)."""
        return dataclasses.replace(self, form=form)


def schema(form: type[BaseModel]) -> dict[str, Any]:
    """The form's JSON schema as ``request_input`` sends it, validated against OpenAI's form schema.

    Rendered by the library's own renderer (an optional field sent without its null, ...): it has
    no public name, and checking another rendering than the one sent would refuse forms ChatGPT
    shows and pass others."""
    from openai_mcp_extensions.form._schema import render_form_schema  # noqa: PLC0415, PLC2701

    try:
        return render_form_schema(form)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))} {plain_error(e)}"
                          for e in exc.errors()[:3])
        raise FormError(f"form {form.__name__} is not an OpenAI form: {where}") from None
    except ValueError as exc:
        raise FormError(f"form {form.__name__} is not an OpenAI form: {exc}") from None


def can_ask(ctx: Context) -> bool:
    """Whether this call's client can show a form: MCP 2026-07-28 or later, with both
    ``elicitation.form`` and ``extensions["openai/elicitation"].form`` in the request's client
    capabilities."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = ctx.client_capabilities
    if caps is None or caps.elicitation is None or caps.elicitation.form is None:
        return False
    openai = (caps.extensions or {}).get(FORM_EXTENSION)
    return isinstance(openai, dict) and isinstance(openai.get("form"), dict)


def must_ask(ctx: Context, question: Question[Any]) -> None:
    """Where no form can be shown, the fallback now, before a tool builds the form's options."""
    if not can_ask(ctx):
        raise ToolFailure(question.needs, question.instead)


def answered(ctx: Context, question: Question[Any], field: str) -> list[str]:
    """The values the person's answer gives ``field`` (a picker's URIs), read before the form is
    rebuilt for the retry; empty on the first call. A retry sent twice still finds a choice the
    first copy acted on (an item deleted since) among the options: see ``still_offered``."""
    if ctx.request_state != STATE_PREFIX + question.key:
        return []
    response = (ctx.input_responses or {}).get(question.key)
    content = getattr(response, "content", None)
    value = content.get(field) if isinstance(content, dict) else None
    values = value if isinstance(value, list) else [value]
    return [v for v in values[:MAX_ANSWERED] if isinstance(v, str)]


def still_offered(ctx: Context, question: Question[Any], options: list[Resource], field: str,
                  prefix: str) -> list[Resource]:
    """``options``, and on a retry the URIs of this account's kind (``prefix``) the answer chose
    that are no longer among them: the first copy of a retry sent twice acted on them (a delete).
    The tool still acts on the account's own items only, so the second copy finds nothing left."""
    offered = {o.uri for o in options}
    gone = [uri for uri in answered(ctx, question, field)
            if uri.startswith(prefix) and uri not in offered and len(uri) <= MAX_URI]
    return options + [option(uri, uri.removeprefix(prefix), uri.removeprefix(prefix))
                      for uri in dict.fromkeys(gone)]


def ask(ctx: Context, question: Question[M]) -> M:
    """The person's answer to ``question``: validated on the retry that carries it; the first time,
    ``Asking`` (the form). ``ToolFailure`` where no form can be shown, or when the person declined,
    closed the form, or sent an answer that does not fit it."""
    if not can_ask(ctx):
        raise ToolFailure(question.needs, question.instead)
    state = STATE_PREFIX + question.key
    responses = ctx.input_responses or {}
    if ctx.request_state != state:
        if responses:  # answers to no question of this call's: never taken as this one's
            raise ToolFailure(say("The answer to the form came without the question it "
                                  "answers, so it was not used."), UNSEALED_ADVICE)
        result = OpenAIExtensions.request_input(ctx, key=question.key,
                                                message=in_language(question.message),
                                                schema=in_words(question.form),
                                                request_state=state)
        assert isinstance(result, InputRequiredResult)  # no answer given: the form
        raise Asking(result)
    if question.key not in responses:  # the state of this question, and no answer to it
        raise ToolFailure(say("The form came back without an answer, so nothing was done."),
                          UNFIT_ADVICE)
    try:
        answer = OpenAIExtensions.request_input(ctx, key=question.key,
                                                message=in_language(question.message),
                                                schema=question.form, request_state=state)
    except ValueError:
        raise ToolFailure(say("The answer does not fit the form (a choice that is no longer "
                              "offered, or a value out of range), so nothing was done."),
                          UNFIT_ADVICE) from None
    if isinstance(answer, AcceptedElicitation):
        return answer.data
    raise ToolFailure(question.declined, DECLINED_ADVICE)


def in_words(form: type[M]) -> type[M]:
    """``form`` with its fields' titles and descriptions said in the request's language, where
    they were written with ``say``; the same form in English. Only what the person reads changes:
    the fields, their types and rules are the form's own (its answers validate the same)."""
    if language() == "en":
        return form
    fields: dict[str, Any] = {}
    for name, info in form.model_fields.items():
        if not isinstance(info.title, Said) and not isinstance(info.description, Said):
            continue
        said = copy.copy(info)
        said.title, said.description = in_language(info.title), in_language(info.description)
        fields[name] = (info.annotation, said)
    return create_model(form.__name__, __base__=form, **fields) if fields else form


def option(uri: str, name: str, title: str, description: str | None = None,
           thumbnail: str | None = None, mime_type: str | None = None) -> Resource:
    """One choice of a picker: an item of the account, by its resource URI."""
    meta = {"openai/thumbnail": {"src": thumbnail}} if thumbnail else None
    return Resource(uri=uri, name=name, title=title, description=description, mime_type=mime_type,
                    _meta=meta)


class Pick(BaseModel):
    """A picker's answer: the URI of the item chosen."""

    model_config = ConfigDict(extra="forbid")

    choice: str


class PickMany(BaseModel):
    """A picker's answer: the URIs of the items chosen."""

    model_config = ConfigDict(extra="forbid")

    choices: list[str]


URI = Annotated[str, WithJsonSchema({"type": "string", "format": "uri"})]


def picker(options: Sequence[Resource], *, title: str, description: str) -> type[Pick]:
    """A form that picks one of ``options`` (items of the account, by resource URI)."""
    extra: dict[str, Any] = {**resource_input(options=options)}
    return create_model("Pick", __base__=Pick, choice=(URI, Field(
        title=title, description=description, json_schema_extra=extra)))


def picker_many(options: Sequence[Resource], *, least: int, most: int, title: str,
                description: str) -> type[PickMany]:
    """A form that picks ``least`` to ``most`` of ``options``, and only among them ("explicit")."""
    extra: dict[str, Any] = {**resource_input(options=options, selection="explicit"),
                             "uniqueItems": True}
    return create_model("PickMany", __base__=PickMany, choices=(list[URI], Field(
        title=title, description=description, min_length=least, max_length=most,
        json_schema_extra=extra)))
