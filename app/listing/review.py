"""The listing held against a server: its test cases checked against the tools it lists (they
exist, the model may call them, their arguments are valid), every tool the model sees covered,
``check``'s rules on descriptors and widgets; then every case replayed as a real ``tools/call``
and its answer compared with what the case expects."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, UnknownType, ValidationError
from referencing.exceptions import Unresolvable

from app.listing.entries import REFERENCE, Case, Form, Listing
from app.mcp.check import PROTOCOL_VERSION, Resources, lint

# Sent with each replayed call, as ChatGPT sends it.
CHATGPT_META = {"openai/locale": "en-US"}


# A server's tools/list is read as it is (another server's, with --url): whatever shape a key
# has, these answer, and shape_problems says what is wrong.
def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def model_visible(tool: Mapping[str, Any]) -> bool:
    ui = _dict(_dict(tool.get("_meta")).get("ui"))
    return "model" in _list(ui.get("visibility", ["model"]))


def needs_account(tool: Mapping[str, Any]) -> bool:
    """No ``noauth`` scheme: an anonymous call is answered with the linking challenge."""
    return not any(_dict(s).get("type") == "noauth" for s in _list(tool.get("securitySchemes")))


def shape_problems(tools: Sequence[Any]) -> list[str]:
    """What makes a listed tool unusable to the replay: no name, an input schema that is none."""
    lines = []
    for number, tool in enumerate(tools, start=1):
        name = _dict(tool).get("name")
        if not isinstance(name, str) or not name:
            lines.append(f"tools/list: tool {number} has no name")
            continue
        schema = _dict(tool).get("inputSchema")
        try:
            Draft202012Validator.check_schema(schema if schema is not None else {})
            if not isinstance(schema, Mapping):
                raise SchemaError("not an object")
            list(Draft202012Validator(schema).iter_errors({}))
        except (SchemaError, UnknownType, Unresolvable) as exc:
            lines.append(f"tool {name}: its inputSchema is not a JSON Schema arguments can be "
                         f"checked against ({type(exc).__name__})")
    return lines


def linked(case: Case, tool: Mapping[str, Any]) -> bool:
    return case.account == "linked" or (case.account is None and needs_account(tool))


def scopes(listing: Listing, tools: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What the linked cases' tools ask for: the scope the replay's sign-in requests."""
    found = {scope for case in listing.cases
             if case.tool in tools and linked(case, tools[case.tool])
             for scheme in _list(tools[case.tool].get("securitySchemes"))
             if _dict(scheme).get("type") == "oauth2" for scope in _list(scheme.get("scopes"))}
    return sorted(str(scope) for scope in found)


def problems(listing: Listing, tools: Sequence[Mapping[str, Any]], resources: Resources,
             base_url: str) -> list[str]:
    """Every way the listing disagrees with the server's tools, one line each (empty: none)."""
    if shaped := shape_problems(tools):
        return shaped
    lines = [f"check: {line}" for line in lint([dict(t) for t in tools], resources)]
    by_name = {tool["name"]: tool for tool in tools}
    seen: set[str] = set()
    for case in listing.cases:
        tool = by_name.get(case.tool)
        if tool is None:
            lines.append(f"{case.where}: no tool is named {case.tool!r} (the server lists "
                         f"{', '.join(sorted(by_name))})")
        elif not model_visible(tool):
            lines.append(f"{case.where}: {case.tool} is called by widgets only (ui.visibility): "
                         "the model never chooses it, so no prompt can test it")
        elif case.account == "anonymous" and needs_account(tool):
            lines.append(f"{case.where}: {case.tool} needs a linked account: it cannot be "
                         "replayed anonymously")
        else:
            lines.extend(f"{case.where}: {line}" for line in _argument_problems(
                case, tool, base_url, seen))
        if case.id:
            seen.add(case.id)
    covered = {case.tool for case in listing.cases}
    for name in sorted(by_name):
        if model_visible(by_name[name]) and name not in covered:
            lines.append(f"tool {name}: no test case: add one to the listing.toml of the feature "
                         "that declares it")
    prompts = listing.prompts
    lines.extend(f"the starter prompt {p!r} is given {prompts.count(p)} times"
                 for p in sorted({p for p in prompts if prompts.count(p) > 1}))
    if not prompts:
        lines.append("no starter prompt: give at least one in a feature's listing.toml "
                     "(prompts = [...])")
    return lines


def _argument_problems(case: Case, tool: Mapping[str, Any], base_url: str,
                       earlier: set[str]) -> list[str]:
    """Arguments against the tool's inputSchema. A value taken from an earlier case's answer
    ({saved.recipe.id}) is known only on replay: its reference is checked, its value then."""
    lines, referenced = [], set()
    for name, value in case.arguments.items():
        for ref in _references(value):
            if ref not in earlier:
                lines.append(f"argument {name}: {{{ref}...}} names no earlier case's id")
            referenced.add(name)
    if case.form is not None:
        lines.extend(f"form {case.form.key!r}: {{{ref}...}} names no earlier case's id"
                     for ref in _references(case.form.answer) if ref not in earlier)
    arguments = resolve(case.arguments, base_url, {})
    lines.extend(_invalid(tool, arguments, skip=referenced))
    return lines


def _references(value: Any) -> list[str]:
    """The case ids a value's references name (``base_url`` is no case's)."""
    return [m.group(1) for m in _references_in(value)]


def _invalid(tool: Mapping[str, Any], arguments: Mapping[str, Any],
             skip: Collection[str] = ()) -> list[str]:
    validator = Draft202012Validator(tool.get("inputSchema") or {"type": "object"})
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.absolute_path))
    return [_said(tool["name"], error) for error in errors
            if not (error.absolute_path and error.absolute_path[0] in skip)]


def _said(tool: str, error: ValidationError) -> str:
    """One line for one invalid argument, naming it."""
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        where = f"{path}." if path else ""
        return f"{tool}: argument {where}{missing} is required and not given"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        extra = sorted(set(error.instance) - set(schema.get("properties") or {}))
        where = f" of {path}" if path else ""
        return f"{tool}: it has no argument{where} named {', '.join(extra)}"
    return f"{tool}: argument {path or '(all)'}: {error.message}"


def resolve(value: Any, base_url: str, answers: Mapping[str, Any]) -> Any:
    """``value`` with its references replaced: ``{base_url}`` by the server's address,
    ``{id.path}`` by what the case ``id`` answered at ``path`` (the whole string, any type;
    inside a longer text, as text). An unknown one is left as written (problems() said so)."""
    if isinstance(value, Mapping):
        return {k: resolve(v, base_url, answers) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, base_url, answers) for v in value]
    if not isinstance(value, str):
        return value

    def found(ref: str, path: str) -> Any:
        if ref == "base_url":
            return base_url
        if ref not in answers:
            return None
        return at(answers[ref], path.lstrip("."))

    whole = REFERENCE.fullmatch(value)
    if whole:
        got = found(whole.group(1), whole.group(2))
        return value if got is None else got
    return REFERENCE.sub(lambda m: str(v) if (v := found(m.group(1), m.group(2))) is not None
                         else m.group(0), value)


def at(data: Any, path: str) -> Any:
    """The value at a dotted path (``recipes.0.title``), None when there is none."""
    for step in path.split(".") if path else []:
        if isinstance(data, Mapping) and step in data:
            data = data[step]
        elif isinstance(data, list) and step.isdigit() and int(step) < len(data):
            data = data[int(step)]
        else:
            return None
    return data


# A tool call's answer is read within this long and up to this size, whatever the server does
# (a trickle of bytes, an endless stream): httpx's timeout bounds each read, not the whole.
CALL_SECONDS = 120
MAX_ANSWER = 16 * 1024 * 1024


class Streamed(Protocol):
    """What the replay reads of an answer as it arrives (``httpx.Response`` in ``stream``)."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def iter_bytes(self) -> Iterator[bytes]: ...


class Http(Protocol):
    """What the replay needs of an HTTP client: ``httpx.Client``."""

    def stream(self, method: str, url: str, *, json: Any,
               headers: dict[str, str]) -> AbstractContextManager[Streamed]: ...


@dataclass(frozen=True)
class Reply:
    """An answer read whole."""

    status_code: int
    headers: Mapping[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def post(http: Http, url: str, body: Any, headers: dict[str, str]) -> Reply:
    deadline = time.monotonic() + CALL_SECONDS
    with http.stream("POST", url, json=body, headers=headers) as reply:
        chunks, size = [], 0
        for chunk in reply.iter_bytes():
            size += len(chunk)
            if size > MAX_ANSWER:
                raise AnswerError(f"the answer is larger than {MAX_ANSWER:,} bytes")
            if time.monotonic() > deadline:
                raise AnswerError(f"the answer took longer than {CALL_SECONDS} s")
            chunks.append(chunk)
        return Reply(reply.status_code, reply.headers,
                     b"".join(chunks).decode("utf-8", "replace"))


@dataclass(frozen=True)
class Outcome:
    case: Case
    ok: bool
    detail: str  # what went wrong, or the answer's first words
    arguments: Mapping[str, Any]
    millis: int


def replay(listing: Listing, tools: Sequence[Mapping[str, Any]], http: Http, mcp_url: str,
           base_url: str, token: Callable[[], str]) -> list[Outcome]:
    """Each case, in order, as a tools/call; a linked one with the bearer ``token()`` gives
    (asked once, at the first linked case; a failure there fails the linked cases)."""
    by_name = {tool["name"]: tool for tool in tools}
    answers: dict[str, Any] = {}
    bearer: str | Exception | None = None
    outcomes = []
    for case in listing.cases:
        arguments = resolve(case.arguments, base_url, answers)
        needed = _references(case.arguments) + _references(case.form.answer if case.form else {})
        if missing := sorted(set(needed) - set(answers)):
            outcomes.append(Outcome(case, False, f"not replayed: it needs the answer of case "
                                    f"{', '.join(missing)}, which did not come", arguments, 0))
            continue
        if unresolved := sorted(set(_unresolved(arguments))):
            outcomes.append(Outcome(case, False, "not replayed: no value at "
                                    f"{', '.join(unresolved)} in that case's answer", arguments, 0))
            continue
        headers = {"accept": "application/json, text/event-stream",
                   "content-type": "application/json", "mcp-protocol-version": PROTOCOL_VERSION}
        if linked(case, by_name[case.tool]):
            if bearer is None:
                try:
                    bearer = token()
                except Exception as exc:  # said once per linked case, never raised
                    bearer = exc
            if isinstance(bearer, Exception):
                outcomes.append(Outcome(case, False, f"no linked account: {bearer}", arguments, 0))
                continue
            headers["authorization"] = f"Bearer {bearer}"
        if invalid := _invalid(by_name[case.tool], arguments):
            outcomes.append(Outcome(case, False, "; ".join(invalid), arguments, 0))
            continue
        started = time.perf_counter()
        params: dict[str, Any] = {"name": case.tool, "arguments": arguments, "_meta": CHATGPT_META}
        if case.form is not None:  # as ChatGPT asks the person: 2026-07-28, with the form
            headers |= {"mcp-protocol-version": FORM_PROTOCOL, "mcp-method": "tools/call",
                        "mcp-name": case.tool}
            params["_meta"] = {**CHATGPT_META, **FORM_ENVELOPE}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
        try:
            result = _result(post(http, mcp_url, body, headers))
            if case.form is not None:
                result = _answered(http, mcp_url, body, headers, case.form,
                                   resolve(case.form.answer, base_url, answers), result)
            wrong = compare(case, result)
        except (OSError, ValueError, RuntimeError, TypeError) as exc:
            # httpx's errors are OSError's or RuntimeError's kin; a broken answer a ValueError.
            outcomes.append(Outcome(case, False, f"no answer: {_plain(exc)}", arguments,
                                    _millis(started)))
            continue
        millis = _millis(started)
        if case.id and not wrong:
            answers[case.id] = _dict(result.get("structuredContent"))
        outcomes.append(Outcome(case, not wrong, "; ".join(wrong) or _first_words(result),
                                arguments, millis))
    return outcomes


FORM_PROTOCOL = "2026-07-28"
FORM_ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": FORM_PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "listing-replay", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {
        "elicitation": {"form": {}}, "extensions": {"openai/elicitation": {"form": {}}}},
}


def _answered(http: Http, mcp_url: str, body: dict[str, Any], headers: dict[str, str],
              form: Form, answer: Any, asked: dict[str, Any]) -> dict[str, Any]:
    """The call again with the person's answer to the form the first answer asked."""
    requests = _dict(asked.get("inputRequests"))
    if asked.get("resultType") != "input_required" or form.key not in requests:
        raise AnswerError(f"expected the form {form.key!r} to be asked, got "
                          f"{_first_words(asked) or 'an answer without it'}")
    params = {**body["params"], "requestState": asked.get("requestState"),
              "inputResponses": {form.key: {"action": "accept", "content": answer}}}
    return _result(post(http, mcp_url, {**body, "params": params}, headers))


def _unresolved(value: Any) -> list[str]:
    """References left as written after ``resolve``: an earlier answer without that path."""
    return [f"{m.group(1)}{m.group(2)}" for m in _references_in(value)]


def _references_in(value: Any) -> list[re.Match[str]]:
    if isinstance(value, str):
        return [m for m in REFERENCE.finditer(value) if m.group(1) != "base_url"]
    if isinstance(value, Mapping):
        return [m for v in value.values() for m in _references_in(v)]
    if isinstance(value, list):
        return [m for v in value for m in _references_in(v)]
    return []


def _plain(exc: BaseException) -> str:
    """An error said for a person: what the server did, not the library's words for it."""
    if isinstance(exc, json.JSONDecodeError):
        return "the answer is not JSON"
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, AnswerError) else f"{type(exc).__name__}: {text}"


class AnswerError(RuntimeError):
    """The server answered, but not with a tool result; the message says what it did."""


def _millis(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _result(reply: Reply) -> dict[str, Any]:
    if reply.status_code == 401:
        raise AnswerError("the server refused the account's token (HTTP 401): sign in again, or "
                          "give a fresh LISTING_TOKEN")
    if reply.status_code != 200:
        raise AnswerError(f"HTTP {reply.status_code} instead of a tool result")
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        # Priming events carry an empty data line: only the messages are read.
        messages = [json.loads(data) for line in reply.text.splitlines()
                    if line.startswith("data:") and (data := line[5:].strip())]
        payload = next((m for m in messages if isinstance(m, dict) and (
            "result" in m or "error" in m)), {})
    else:
        payload = reply.json()
    if not isinstance(payload, dict):
        raise AnswerError("the answer is not a JSON-RPC message")
    if isinstance(payload.get("error"), dict):
        raise AnswerError(f"JSON-RPC error {payload['error'].get('code')}: "
                          f"{payload['error'].get('message')}")
    if not isinstance(payload.get("result"), dict):
        raise AnswerError("the answer holds no tool result")
    return payload["result"]


def _text_of(result: Mapping[str, Any]) -> str:
    return " ".join(str(_dict(block).get("text", "")) for block in _list(result.get("content"))
                    if _dict(block).get("type") == "text")


def _first_words(result: Mapping[str, Any]) -> str:
    text = " ".join(_text_of(result).split())
    return text if len(text) <= 100 else text[:99] + "…"


def compare(case: Case, result: Mapping[str, Any]) -> list[str]:
    """How the answer differs from what the case expects (empty: it does not)."""
    wrong = []
    failed = result.get("isError") is True
    if failed != case.expect.error:
        said = _first_words(result)
        wrong.append(f"expected {'an error' if case.expect.error else 'an answer'}, "
                     f"got {'an error' if failed else 'an answer'}: {said}")
        return wrong
    text = _text_of(result)
    wrong.extend(f"the answer does not say {phrase!r}: {_first_words(result)}"
                 for phrase in case.expect.text if phrase not in text)
    structured = _dict(result.get("structuredContent"))
    for path, number in case.expect.count.items():
        found = at(structured, path)
        if not isinstance(found, list) or len(found) != number:
            got = len(found) if isinstance(found, list) else "no list"
            wrong.append(f"expected {number} items at {path}, got {got}")
    for path, value in case.expect.equals.items():
        found = at(structured, path)
        if found != value:
            wrong.append(f"expected {path} = {json.dumps(value)}, got {json.dumps(found)}")
    return wrong
