"""A tool call whose arguments fail the tool's schema, said for the person and for the model.

The SDK validates a call's arguments before the tool runs and answers a failure with pydantic's
text ("1 validation error for save_recipeArguments ... Field required ... For further information
visit https://errors.pydantic.dev/..."), which neither should read. The registry keeps, per tool, a
model of the same arguments, made from the signature the SDK reads (``Arguments.of``); on such a
failure, and only then (a call that passes costs nothing more), ``explain`` validates the
arguments against it and says what failed: the person reads which value and why, the model which
argument to fix, what it holds, and to ask the person when it does not know.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from app.mcp.errors import ToolFailure
from app.plain import plain_error
from app.wording import Wording

say = Wording(__file__)
MAX_SHOWN = 60  # characters of a rejected value repeated to the model
MAX_NAME = 40  # characters of each step of an argument's path (a key the caller wrote) repeated
MAX_PROBLEMS = 5  # a call wrong in many ways: the first few are enough to fix it


def _is_context(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, Context)


@dataclass(frozen=True)
class Arguments:
    """A tool's arguments as a model of their own: its name and title, and its parameters."""

    tool: str
    title: str
    model: type[BaseModel]

    @classmethod
    def of(cls, tool: str, title: str, fn: Callable[..., Any]) -> Arguments:
        hints = typing.get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for name, parameter in inspect.signature(fn).parameters.items():
            annotation = hints.get(name, Any)
            if _is_context(annotation):
                continue  # the SDK passes the Context itself; it is no argument
            default = ... if parameter.default is inspect.Parameter.empty else parameter.default
            fields[name] = (annotation, default)
        config = ConfigDict(arbitrary_types_allowed=True)
        return cls(tool, title, create_model(f"{tool}_arguments", __config__=config, **fields))

    def explain(self, arguments: Mapping[str, Any] | None) -> ToolFailure | None:
        """What is wrong with ``arguments``; None when this model finds nothing wrong. Read as the
        SDK reads them: a value written as JSON inside a string, for an argument that is not text,
        is that JSON (its ``pre_parse_json``, a documented leniency, done here the same way)."""
        try:
            self.model.model_validate(self._pre_parsed(dict(arguments or {})))
        except ValidationError as exc:
            problems = exc.errors(include_url=False)[:MAX_PROBLEMS]
            return ToolFailure(self._for_person(problems), self._for_model(problems))
        return None

    def _pre_parsed(self, arguments: dict[str, Any]) -> dict[str, Any]:
        for name, value in arguments.items():
            field = self.model.model_fields.get(name)
            if field is None or not isinstance(value, str) or field.annotation is str:
                continue
            try:
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                continue
            if not isinstance(parsed, str | int | float):
                arguments[name] = parsed
        return arguments

    def _for_person(self, problems: list[Any]) -> str:
        said = tuple(say("{argument} {problem}", argument=_where(p), problem=plain_error(p))
                     for p in problems)
        return say("{title} could not run: {problems}.", title=self.title, problems=said)

    def _for_model(self, problems: list[Any]) -> str:
        fixes: list[str] = []
        for problem in problems:
            where = _where(problem)
            loc = problem["loc"]
            # What the argument holds, said for a top-level one (a nested value's own field has
            # no description here: the argument's would be repeated for each).
            field = self.model.model_fields.get(str(loc[0])) if len(loc) == 1 else None
            holds = f" ({field.description})" if field is not None and field.description else ""
            if problem["type"] == "missing":
                fixes.append(f"{where} set{holds}")
            else:
                fixes.append(f"{where} fixed: it {plain_error(problem)}{_got(problem.get('input'))}"
                             f"{holds}")
        return (f"Call {self.tool} again with {'; '.join(fixes)}. If you do not know a value, ask "
                "the user for it rather than guessing.")


def _where(problem: Mapping[str, Any]) -> str:
    """The argument's path, each step as written but cut short: a key is the caller's text."""
    loc = [_short(str(part)) for part in list(problem.get("loc", ()))[:6]]
    path = ".".join(loc) if loc else "the arguments"
    return f"`{path}`"


def _short(step: str) -> str:
    return step if len(step) <= MAX_NAME else step[:MAX_NAME] + "…"


def _got(value: Any) -> str:
    if isinstance(value, str | int | float):
        shown = repr(value)
        return f", not {shown}" if len(shown) <= MAX_SHOWN else ""
    return ""
