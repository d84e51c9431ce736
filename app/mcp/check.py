"""``python -m app check``: lint the descriptors a server actually puts on the wire (docs/chatgpt-contract.md §9).

``lint`` is a pure function over the JSON of ``tools/list`` and of the widget
resources, so it can check this server in-process or any server over HTTP.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

from mcp.server.apps import APP_MIME_TYPE
from openai_mcp_extensions import (
    OpenAIFileEntrypoint,
    OpenAIGlobalEntrypoint,
    OpenAIUiToolMetadata,
)
from pydantic import ValidationError

REQUIRED_HINTS = ("readOnlyHint", "destructiveHint", "openWorldHint")
FILE_PROPS = ("download_url", "file_id", "mime_type", "file_name")
FILE_REQUIRED = {"download_url", "file_id"}
MAX_STATUS = 64  # ChatGPT's limit on openai/toolInvocation/* (the registry refuses longer ones)
PROTOCOL_VERSION = "2025-06-18"
MAX_PAGES = 100  # of tools/list or resources/list: far more than any server lists
Resources = dict[str, dict[str, Any]]  # uri -> {"mimeType": ..., "contents": [...]}


def lint(tools: list[dict[str, Any]], resources: Resources) -> list[str]:
    problems: list[str] = []
    names = [tool.get("name", "?") for tool in tools]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"tool {name}: listed {names.count(name)} times (clients keep only one)")
    for tool in tools:
        problems.extend(f"tool {tool.get('name', '?')}: {p}" for p in _lint_tool(tool, resources))
        problems.extend(f"tool {tool.get('name', '?')}: {p}" for p in _lint_native(tool, names))
    for uri, res in sorted(resources.items()):
        if res.get("mimeType") == APP_MIME_TYPE or uri.startswith("ui://"):
            problems.extend(f"resource {uri}: {p}" for p in _lint_widget(res))
    return problems


def _lint_tool(tool: dict[str, Any], resources: Resources) -> Iterator[str]:
    meta = _object(tool.get("_meta"))
    if not tool.get("outputSchema"):
        yield "no outputSchema (every tool returning structuredContent must declare one)"
    hints = tool.get("annotations") or {}
    for hint in REQUIRED_HINTS:
        if not isinstance(hints.get(hint), bool):
            yield f"annotation {hint} is missing"
    top, mirror = tool.get("securitySchemes"), meta.get("securitySchemes")
    if top is None or mirror is None:
        yield "securitySchemes must be declared at the top level and mirrored in _meta"
    elif top != mirror:
        yield "securitySchemes top level and _meta.securitySchemes differ"
    for scheme in top or []:
        if scheme.get("type") not in ("noauth", "oauth2"):
            yield f"unknown security scheme type {scheme.get('type')!r}"
        elif scheme.get("type") == "oauth2" and not isinstance(scheme.get("scopes", []), list):
            yield "oauth2 scheme scopes must be a list"
    for key in ("openai/toolInvocation/invoking", "openai/toolInvocation/invoked"):
        value = meta.get(key)
        if value is not None and (not isinstance(value, str) or len(value) > MAX_STATUS):
            yield f"{key} must be a string of at most {MAX_STATUS} characters"
    ui = _object(meta.get("ui"))
    uri, template = ui.get("resourceUri"), meta.get("openai/outputTemplate")
    if (uri or template) and uri != template:
        yield f"ui.resourceUri ({uri!r}) and openai/outputTemplate ({template!r}) must be identical"
    if uri and uri not in resources:
        yield f"ui.resourceUri {uri!r} is not a listed resource"
    visibility = ui.get("visibility")
    if visibility is not None and (not visibility or not set(visibility) <= {"model", "app"}):
        yield "ui.visibility must be a non-empty subset of ['model', 'app']"
    yield from _lint_file_params(tool, meta.get("openai/fileParams"))
    if meta.get("openai/profile") is True:
        if hints.get("readOnlyHint") is not True:
            yield "the profile tool must be read-only"
        if not any(s.get("type") == "oauth2" for s in top or []) or any(s.get("type") == "noauth" for s in top or []):
            yield "the profile tool must use an oauth2 security scheme and no noauth (anonymous has no profile)"
        if (tool.get("inputSchema") or {}).get("properties"):
            yield "the profile tool must take no input"
        yield from _lint_profile_output(tool.get("outputSchema") or {})


def _lint_native(tool: dict[str, Any], names: list[str]) -> Iterator[str]:
    """ChatGPT's native keys (openai/mcp-extensions docs/spec.md): entrypoints, quick actions and
    the @-mention search tool, as the host will call them."""
    meta = _object(tool.get("_meta"))
    schema = _object(tool.get("inputSchema"))
    required = schema.get("required") or []
    if "openai/ui" in meta:
        try:
            ui = OpenAIUiToolMetadata.model_validate(meta["openai/ui"])
        except ValidationError as exc:
            yield f"_meta.openai/ui is not what ChatGPT reads: {exc.errors()[0]['msg']}"
            return
        for entry in ui.entrypoints or []:
            if isinstance(entry, OpenAIFileEntrypoint):
                file = _object(_object(schema.get("properties")).get("file"))
                if "file" not in required or not file:
                    yield "a file entrypoint calls the tool with {file: {name, resourceUri}}: " \
                          "its input must require `file`"
            elif required:
                yield f"a {entry.type} entrypoint calls the tool with {{}}: it requires " \
                      f"{', '.join(map(str, required))}"
            quick = entry.quick_action if isinstance(entry, OpenAIGlobalEntrypoint) else None
            if quick is not None and quick.target.name not in names:
                yield f"the quick action {quick.title!r} calls {quick.target.name!r}, which is " \
                      "not listed"
    if "mentions/search" in _object(meta.get("openai/extensions")):
        hints = _object(tool.get("annotations"))
        if hints.get("readOnlyHint") is not True:
            yield "the @-mention search tool must be read-only"
        if "app" not in (_object(meta.get("ui")).get("visibility") or []):
            yield "the @-mention search tool needs \"app\" in ui.visibility (the host calls it)"


PROFILE_FIELDS = {"id", "name", "email", "nickname"}


def _lint_profile_output(schema: dict[str, Any]) -> Iterator[str]:
    """ChatGPT's profile shape: {id (non-blank string), name?, email?, nickname?}, nothing else."""
    props = schema.get("properties") or {}
    identifier = props.get("id") or {}
    if schema.get("required") != ["id"] or identifier.get("type") != "string" or not identifier.get("minLength"):
        yield "the profile tool's outputSchema must require exactly id, a string with minLength >= 1"
    if identifier.get("type") == "string" and identifier.get("pattern") != "\\S":
        yield "the profile tool's id must have the pattern \\S (not blank)"
    if extra := sorted(set(props) - PROFILE_FIELDS):
        yield f"the profile tool's outputSchema has fields ChatGPT does not read: {', '.join(extra)}"
    if schema.get("additionalProperties") is not False:
        yield "the profile tool's outputSchema must set additionalProperties: false"
    for field in sorted(PROFILE_FIELDS - {"id"} & set(props)):
        if props[field].get("type") != "string":
            yield f"the profile tool's {field} must be a string (omitted when unknown, never null)"


def _lint_file_params(tool: dict[str, Any], params: Any) -> Iterator[str]:
    if params is None:
        return
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        yield "openai/fileParams must be a list of field names"
        return
    schema = tool.get("inputSchema") or {}
    for name in params:
        prop = (schema.get("properties") or {}).get(name)
        if prop is None:
            yield f"file param {name!r} is not a top-level input property"
            continue
        prop = _resolve(schema, prop)
        if prop.get("type") == "array":
            prop = _resolve(schema, prop.get("items") or {})
        props = prop.get("properties") or {}
        for field in FILE_PROPS:
            if (props.get(field) or {}).get("type") != "string":
                yield f"file param {name!r} must declare {field} as a string property"
        required = set(prop.get("required") or [])
        if required != FILE_REQUIRED:
            yield f"file param {name!r} must require exactly download_url and file_id (requires {sorted(required)})"


def _resolve(root: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    for _ in range(10):
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        node = target
    return node


def _lint_widget(res: dict[str, Any]) -> Iterator[str]:
    if res.get("mimeType") != APP_MIME_TYPE:
        yield f"mimeType must be {APP_MIME_TYPE!r}"
    contents = res.get("contents") or []
    if not contents:
        yield "resources/read returned no contents"
    for item in contents:
        if not isinstance(item, dict):
            yield "resources/read contents must be objects"
            continue
        meta = _object(item.get("_meta"))
        if item.get("mimeType") != APP_MIME_TYPE:
            yield f"contents mimeType must be {APP_MIME_TYPE!r}"
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            yield "contents carry no HTML text"
            text = ""
        yield from _lint_widget_meta(meta)
        yield from _lint_widget_html(text, meta)


def _lint_widget_meta(meta: dict[str, Any]) -> Iterator[str]:
    """Every key of SPEC §5, and the standard and ChatGPT aliases saying the same thing."""
    ui = _object(meta.get("ui"))
    csp, legacy = ui.get("csp"), meta.get("openai/widgetCSP")
    if not ui.get("domain"):
        yield "ui.domain is missing"
    if ui.get("domain") != meta.get("openai/widgetDomain"):
        yield "openai/widgetDomain must equal ui.domain"
    if not isinstance(ui.get("prefersBorder"), bool):
        yield "ui.prefersBorder is missing"
    if ui.get("prefersBorder") != meta.get("openai/widgetPrefersBorder"):
        yield "openai/widgetPrefersBorder must equal ui.prefersBorder"
    modes = _object(meta.get("openai/ui")).get("availableDisplayModes")
    # ChatGPT renders inline and fullscreen only: a pip offered to it is a mode it never shows.
    shown = ("inline", "fullscreen")
    if not isinstance(modes, list) or not modes or not all(m in shown for m in modes):
        yield "openai/ui.availableDisplayModes must be a non-empty subset of inline, fullscreen"
    if not isinstance(meta.get("openai/widgetDescription"), str) or not meta["openai/widgetDescription"].strip():
        yield "openai/widgetDescription is missing"
    if not isinstance(csp, dict):
        yield "ui.csp is missing"
        csp = {}
    if not isinstance(legacy, dict):
        yield "openai/widgetCSP is missing"
        legacy = {}
    for std, snake in CSP_KEYS:
        if std in ("connectDomains", "resourceDomains") and not isinstance(csp.get(std), list):
            yield f"ui.csp.{std} must be a list"
        if (csp.get(std) or []) != (legacy.get(snake) or []):
            yield f"ui.csp.{std} and openai/widgetCSP.{snake} must list the same domains"
    for key, lists in (("ui.csp", csp), ("openai/widgetCSP", legacy)):
        for name, domains in lists.items():
            if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
                yield f"{key}.{name} must be a list of origins"
            elif any("*" in d for d in domains):
                yield f"{key} must not use wildcard domains"


CSP_KEYS = (("connectDomains", "connect_domains"), ("resourceDomains", "resource_domains"),
            ("frameDomains", "frame_domains"))
# A script, style, image, font or frame fetched from another origin (not inlined into the bundle):
# src/href/srcset of the tags that load something, and CSS @import / url(...).
_EXTERNAL = (
    re.compile(r"<(?:script|link|img|iframe|source|video|audio|embed|object)\b[^>]*?\b(?:src|href|srcset|data)"
               r"\s*=\s*[\"']?((?:https?:)?//[^\"'\s>,]+)", re.IGNORECASE),
    re.compile(r"@import\s+(?:url\(\s*)?[\"']?((?:https?:)?//[^\"')\s;]+)", re.IGNORECASE),
    re.compile(r"url\(\s*[\"']?((?:https?:)?//[^\"')\s]+)", re.IGNORECASE),
)


def _lint_widget_html(text: str, meta: dict[str, Any]) -> Iterator[str]:
    if text and not text.lstrip()[:15].lower().startswith("<!doctype html"):
        yield "contents text must be an HTML document: start it with the HTML doctype"
    declared = _object(_object(meta.get("ui")).get("csp")).get("resourceDomains")
    allowed = {_origin(d) for d in declared if isinstance(d, str)} if isinstance(declared, list) else set()
    for url in sorted({u for pattern in _EXTERNAL for u in pattern.findall(text)}):
        if _origin(url) not in allowed:
            yield f"the HTML loads {url[:120]} from an origin not in ui.csp.resourceDomains (the host will block it)"


def _origin(url: str) -> str:
    try:
        parts = urlsplit(url if not url.startswith("//") else "https:" + url)
    except ValueError:  # e.g. a malformed IPv6 literal: matches no declared origin
        return url
    return f"{parts.scheme}://{parts.netloc}".lower()


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object; ``{}`` otherwise (its absence is reported by the caller)."""
    return value if isinstance(value, dict) else {}


class Reply(Protocol):
    """What the linter reads of an HTTP answer."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def text(self) -> str: ...

    def json(self) -> Any: ...

    def raise_for_status(self) -> Any: ...


class Poster(Protocol):
    """The HTTP client the linter needs: ``httpx.Client`` for a URL, Starlette's ``TestClient`` for this
    server in process (an httpx2 client once the SDK installs httpx2: the same calls, another type)."""

    def post(self, url: str, *, json: Any, headers: dict[str, str]) -> Reply: ...


class RpcClient:
    """Minimal JSON-RPC over streamable HTTP (legacy handshake), enough to fetch descriptors.

    Accepts JSON and SSE responses and keeps a session id, so stateful servers work too.
    """

    def __init__(self, http: Poster, url: str) -> None:
        self.http, self.url, self._id, self._session = http, url, 0, None

    def _headers(self, method: str) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        if self._session:
            headers["mcp-session-id"] = self._session
        if method != "initialize":
            headers["mcp-protocol-version"] = PROTOCOL_VERSION
        return headers

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._id += 1
        body = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params or {}}
        resp = self.http.post(self.url, json=body, headers=self._headers(method))
        resp.raise_for_status()
        self._session = resp.headers.get("mcp-session-id", self._session)
        payload = _response_for(resp, self._id)
        if "error" in payload:
            raise RuntimeError(f"{method}: {payload['error']}")
        return payload["result"]

    def notify(self, method: str) -> None:
        self.http.post(self.url, json={"jsonrpc": "2.0", "method": method}, headers=self._headers(method))

    def paged(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor, seen = None, set()
        # A server that pages forever (a cursor it gives again, or no end) is said, not followed.
        for _ in range(MAX_PAGES):
            result = self.call(method, {"cursor": cursor} if cursor else {})
            page = result.get(key, []) if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise ValueError(f"{method}: the answer holds no list of {key}")
            items.extend(page)
            cursor = result.get("nextCursor")
            if not cursor:
                return items
            if not isinstance(cursor, str) or cursor in seen:
                raise ValueError(f"{method}: the server gives the cursor {str(cursor)[:40]!r} "
                                 "again")
            seen.add(cursor)
        raise ValueError(f"{method}: more than {MAX_PAGES} pages")


def _response_for(resp: Reply, request_id: int) -> dict[str, Any]:
    if not resp.headers.get("content-type", "").startswith("text/event-stream"):
        return resp.json()
    for line in resp.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                return message
    raise ValueError("the event stream ended without a response")


def collect(http: Poster, url: str) -> tuple[list[dict[str, Any]], Resources]:
    rpc = RpcClient(http, url)
    rpc.call("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                            "clientInfo": {"name": "app-check", "version": "1"}})
    rpc.notify("notifications/initialized")
    tools = rpc.paged("tools/list", "tools")
    resources: Resources = {}
    for res in rpc.paged("resources/list", "resources"):
        resources[res["uri"]] = {"mimeType": res.get("mimeType"),
                                 "contents": rpc.call("resources/read", {"uri": res["uri"]}).get("contents", [])}
    return tools, resources
