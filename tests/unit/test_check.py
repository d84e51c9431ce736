"""``python -m app check`` rules, each fed a descriptor that breaks exactly one of them."""

from __future__ import annotations

import copy

import pytest

from app.mcp.check import lint

URI = "ui://widget/demo.abc.html"
FILE_DEF = {
    "type": "object",
    "properties": {k: {"type": "string"} for k in ("download_url", "file_id", "mime_type", "file_name")},
    "required": ["download_url", "file_id"],
    "additionalProperties": False,
}
GOOD_TOOL = {
    "name": "analyze_file",
    "inputSchema": {"type": "object", "properties": {"file": {"$ref": "#/$defs/OpenAIFile"}},
                    "required": ["file"], "$defs": {"OpenAIFile": FILE_DEF}},
    "outputSchema": {"type": "object", "properties": {}},
    "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    "securitySchemes": [{"type": "noauth"}],
    "_meta": {
        "securitySchemes": [{"type": "noauth"}],
        "ui": {"resourceUri": URI},
        "openai/outputTemplate": URI,
        "openai/toolInvocation/invoking": "Reading…",
        "openai/fileParams": ["file"],
    },
}
GOOD_RESOURCE = {
    "mimeType": "text/html;profile=mcp-app",
    "contents": [{
        "uri": URI, "mimeType": "text/html;profile=mcp-app", "text": "<!doctype html><p>hi</p>",
        "_meta": {"ui": {"domain": "https://example.com", "prefersBorder": True,
                         "csp": {"connectDomains": [], "resourceDomains": ["https://cdn.example.com"]}},
                  "openai/widgetCSP": {"connect_domains": [], "resource_domains": ["https://cdn.example.com"],
                                       "redirect_domains": ["https://docs.example.com"]},
                  "openai/widgetDomain": "https://example.com",
                  "openai/widgetPrefersBorder": True,
                  "openai/ui": {"availableDisplayModes": ["inline", "fullscreen"]},
                  "openai/widgetDescription": "Shows the demo."},
    }],
}


def _lint(tool=None, resource=None):
    return lint([tool or GOOD_TOOL], {URI: resource or GOOD_RESOURCE})


def _broken(path: list, value=None, *, delete=False, base=GOOD_TOOL):
    broken = copy.deepcopy(base)
    node = broken
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return broken


def test_a_conforming_descriptor_has_no_violations():
    assert _lint() == []


def test_conforming_entrypoints_have_no_violations():
    tool = _broken(["_meta", "openai/ui"], {"entrypoints": [
        {"type": "file", "extensions": [".csv", ".pdf"]}]})
    assert _lint(tool=tool) == []
    anywhere = _broken(["inputSchema", "required"], [], base=_broken(["_meta", "openai/ui"], {
        "entrypoints": [{"type": "thread"}, {"type": "global", "quickAction": {
            "title": "Go", "icons": [{"src": "data:,"}],
            "target": {"type": "tool", "name": "analyze_file"}}}]}))
    assert _lint(tool=anywhere) == []


@pytest.mark.parametrize(
    ("tool", "needle"),
    [
        (_broken(["outputSchema"], delete=True), "no outputSchema"),
        (_broken(["annotations", "openWorldHint"], delete=True), "openWorldHint is missing"),
        (_broken(["annotations", "readOnlyHint"], "yes"), "readOnlyHint is missing"),
        (_broken(["_meta", "openai/toolInvocation/invoking"], "x" * 65), "at most 64"),
        (_broken(["_meta", "openai/outputTemplate"], "ui://widget/other.html"), "must be identical"),
        (_broken(["securitySchemes"], [{"type": "oauth2", "scopes": ["a"]}]), "differ"),
        (_broken(["securitySchemes"], delete=True), "top level and mirrored"),
        (_broken(["inputSchema", "$defs", "OpenAIFile", "required"], ["download_url", "file_id", "file_name"]),
         "require exactly download_url and file_id"),
        (_broken(["inputSchema", "$defs", "OpenAIFile", "properties", "mime_type"], delete=True),
         "mime_type as a string"),
        (_broken(["_meta", "openai/fileParams"], ["missing"]), "not a top-level input property"),
        (_broken(["_meta", "ui", "visibility"], ["everyone"]), "ui.visibility"),
        (_broken(["_meta", "openai/profile"], True), "oauth2 security scheme"),
        # ChatGPT's native keys: a global entrypoint on a tool that needs `file` (called with {}),
        # a file entrypoint on a tool without `file`, a quick action to no listed tool, an
        # entrypoint of a kind ChatGPT does not know, an @-mention search the host cannot call.
        (_broken(["_meta", "openai/ui"], {"entrypoints": [{"type": "global"}]}),
         "a global entrypoint calls the tool with {}: it requires file"),
        (_broken(["_meta", "openai/ui"], {"entrypoints": [{"type": "thread"}]}),
         "a thread entrypoint calls the tool with {}"),
        (_broken(["inputSchema", "required"], [], base=_broken(
            ["_meta", "openai/ui"], {"entrypoints": [{"type": "file", "extensions": [".csv"]}]})),
         "its input must require `file`"),
        (_broken(["_meta", "openai/ui"], {"entrypoints": [{"type": "global", "quickAction": {
            "title": "Go", "icons": [{"src": "data:,"}], "target": {"type": "tool",
                                                                  "name": "gone"}}}]}),
         "calls 'gone', which is not listed"),
        (_broken(["_meta", "openai/ui"], {"entrypoints": [{"type": "sidebar"}]}),
         "_meta.openai/ui is not what ChatGPT reads"),
        (_broken(["_meta", "openai/extensions"], {"mentions/search": {}}),
         "needs \"app\" in ui.visibility"),
        (_broken(["annotations", "readOnlyHint"], False, base=_broken(
            ["_meta", "openai/extensions"], {"mentions/search": {}})),
         "the @-mention search tool must be read-only"),
    ],
)
def test_each_planted_tool_violation_is_reported(tool, needle):
    problems = _lint(tool=tool)
    assert any(needle in p for p in problems), problems


@pytest.mark.parametrize(
    ("path", "value", "delete", "needle"),
    [
        (["contents", 0, "_meta", "ui", "domain"], None, True, "ui.domain is missing"),
        (["contents", 0, "_meta", "openai/widgetCSP"], None, True, "openai/widgetCSP is missing"),
        (["contents", 0, "_meta", "ui", "csp"], None, True, "ui.csp is missing"),
        (["mimeType"], "text/html", False, "mimeType must be"),
        (["contents", 0, "_meta", "ui", "csp", "connectDomains"], ["https://*.example.com"], False, "wildcard"),
        (["contents", 0, "_meta", "openai/widgetDomain"], "https://other.example", False,
         "openai/widgetDomain must equal ui.domain"),
        (["contents", 0, "_meta", "openai/widgetPrefersBorder"], None, True,
         "openai/widgetPrefersBorder must equal ui.prefersBorder"),
        (["contents", 0, "_meta", "ui", "prefersBorder"], None, True, "ui.prefersBorder is missing"),
        (["contents", 0, "_meta", "openai/ui"], None, True, "availableDisplayModes"),
        (["contents", 0, "_meta", "openai/ui", "availableDisplayModes"], ["tv"], False, "availableDisplayModes"),
        # ChatGPT never renders picture-in-picture: offering it is a mistake, not an option.
        (["contents", 0, "_meta", "openai/ui", "availableDisplayModes"], ["inline", "pip"], False,
         "subset of inline, fullscreen"),
        (["contents", 0, "_meta", "openai/widgetDescription"], " ", False, "openai/widgetDescription is missing"),
        (["contents", 0, "_meta", "openai/widgetCSP", "resource_domains"], [], False,
         "ui.csp.resourceDomains and openai/widgetCSP.resource_domains must list the same domains"),
        (["contents", 0, "_meta", "ui", "csp", "resourceDomains"], None, True, "ui.csp.resourceDomains must be a list"),
        (["contents", 0, "text"], "<p>hi</p>", False, "must be an HTML document"),
        (["contents", 0, "text"], '<!doctype html><script src="https://evil.example/x.js"></script>', False,
         "loads https://evil.example/x.js from an origin not in ui.csp.resourceDomains"),
        (["contents", 0, "text"], '<!doctype html><link rel=stylesheet href=//fonts.example/a.css>', False,
         "from an origin not in ui.csp.resourceDomains"),
        (["contents", 0, "text"], "<!doctype html><style>@import url(https://fonts.example/css2?family=X);</style>",
         False, "loads https://fonts.example/css2?family=X from an origin not in ui.csp.resourceDomains"),
        (["contents", 0, "text"], '<!doctype html><style>body{background:url("//img.example/bg.png")}</style>',
         False, "loads //img.example/bg.png from an origin"),
        (["contents", 0, "text"], '<!doctype html><img srcset="https://img.example/a.png 2x">', False,
         "loads https://img.example/a.png from an origin"),
        (["contents", 0, "_meta", "ui"], "not an object", False, "ui.domain is missing"),
        (["contents", 0, "_meta", "openai/ui"], ["inline"], False, "availableDisplayModes"),
        (["contents", 0, "_meta", "openai/ui", "availableDisplayModes"], [{"mode": "inline"}], False,
         "availableDisplayModes"),
        (["contents", 0, "_meta", "ui", "csp", "connectDomains"], "https://api.example.com", False,
         "ui.csp.connectDomains must be a list"),
        (["contents", 0, "text"], '<!doctype html><script src="https://[::1/x.js"></script>', False,
         "loads https://[::1/x.js from an origin not in ui.csp.resourceDomains"),
    ],
)
def test_each_planted_widget_violation_is_reported(path, value, delete, needle):
    problems = _lint(resource=_broken(path, value, delete=delete, base=GOOD_RESOURCE))
    assert any(needle in p for p in problems), problems


def test_an_asset_from_a_declared_resource_domain_is_accepted():
    resource = _broken(["contents", 0, "text"], '<!doctype html><script src="https://cdn.example.com/a.js"></script>',
                       base=GOOD_RESOURCE)
    assert _lint(resource=resource) == []


def test_a_tool_pointing_at_an_unlisted_widget_is_reported():
    assert any("not a listed resource" in p for p in lint([GOOD_TOOL], {}))


def test_array_file_params_are_checked_through_items():
    tool = copy.deepcopy(GOOD_TOOL)
    tool["inputSchema"]["properties"]["file"] = {"type": "array", "items": {"$ref": "#/$defs/OpenAIFile"}}
    assert _lint(tool=tool) == []
    tool["inputSchema"]["$defs"]["OpenAIFile"]["required"] = ["file_id"]
    assert any("require exactly" in p for p in _lint(tool=tool))


def test_the_check_command_prints_one_line_per_violation_and_exits_1(monkeypatch, capsys):
    import app.mcp.check as check
    from app.__main__ import main

    broken = _broken(["annotations", "destructiveHint"], delete=True)
    monkeypatch.setattr(check, "collect", lambda http, url: ([broken], {URI: GOOD_RESOURCE}))
    assert main(["check", "--url", "http://127.0.0.1:9/mcp"]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["tool analyze_file: annotation destructiveHint is missing"]


def test_the_check_command_exits_0_on_conforming_descriptors(monkeypatch, capsys):
    import app.mcp.check as check
    from app.__main__ import main

    monkeypatch.setattr(check, "collect", lambda http, url: ([GOOD_TOOL], {URI: GOOD_RESOURCE}))
    assert main(["check", "--url", "http://127.0.0.1:9/mcp"]) == 0
    assert capsys.readouterr().out.startswith("ok: 1 tools, 1 resources")


def test_a_tool_listed_twice_is_reported_once_with_its_count():
    assert lint([GOOD_TOOL, GOOD_TOOL], {URI: GOOD_RESOURCE}) == [
        "tool analyze_file: listed 2 times (clients keep only one)"]


def test_check_refuses_this_server_when_two_features_declare_one_tool_name(monkeypatch, capsys):
    import app.main
    from app.__main__ import main
    from app.auth.schemes import NOAUTH
    from app.feature import Feature

    def declare(registry, deps):
        @registry.tool(name="echo", title="Echo", description="d", read_only=True, destructive=False,
                       open_world=False, security=[NOAUTH])
        async def echo() -> str:
            return "x"

    monkeypatch.setattr(app.main, "discover_features", lambda: [Feature(name="a", tools=declare),
                                                                Feature(name="b", tools=declare)])
    assert main(["check"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("check: tool 'echo' is declared twice: by ")


GOOD_PROFILE = {
    "name": "get_account_profile",
    "inputSchema": {"type": "object", "properties": {}},
    "outputSchema": {"type": "object", "additionalProperties": False, "required": ["id"], "properties": {
        "id": {"type": "string", "minLength": 1, "pattern": "\\S"}, "name": {"type": "string"},
        "email": {"type": "string"}, "nickname": {"type": "string"}}},
    "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    "securitySchemes": [{"type": "oauth2", "scopes": []}],
    "_meta": {"securitySchemes": [{"type": "oauth2", "scopes": []}], "openai/profile": True},
}


def test_a_conforming_profile_tool_has_no_violations():
    assert lint([GOOD_PROFILE], {}) == []


@pytest.mark.parametrize(
    ("tool", "needle"),
    [
        (_broken(["annotations", "readOnlyHint"], False, base=GOOD_PROFILE), "must be read-only"),
        (_broken(["inputSchema", "properties"], {"who": {"type": "string"}}, base=GOOD_PROFILE), "no input"),
        (_broken(["outputSchema", "properties", "id", "minLength"], delete=True, base=GOOD_PROFILE), "minLength"),
        (_broken(["outputSchema", "properties", "id", "pattern"], delete=True, base=GOOD_PROFILE), "pattern"),
        (_broken(["outputSchema", "additionalProperties"], delete=True, base=GOOD_PROFILE), "additionalProperties"),
        (_broken(["outputSchema", "properties", "avatar"], {"type": "string"}, base=GOOD_PROFILE), "avatar"),
        (_broken(["outputSchema", "properties", "email"], {"type": ["string", "null"]}, base=GOOD_PROFILE),
         "email must be a string"),
        (_broken(["outputSchema", "required"], ["id", "name"], base=GOOD_PROFILE), "require exactly id"),
    ],
)
def test_each_planted_profile_tool_violation_is_reported(tool, needle):
    both = [{"type": "noauth"}, {"type": "oauth2", "scopes": []}]
    anonymous = _broken(["_meta", "securitySchemes"], both, base=_broken(["securitySchemes"], both, base=GOOD_PROFILE))
    assert any("no noauth" in p for p in lint([anonymous], {}))
    problems = lint([tool], {})
    assert any(needle in p for p in problems), problems
