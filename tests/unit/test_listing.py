"""The listing's files and checks, without a server: what `python -m app listing` refuses before
it replays anything (each problem one line naming its file and case), how a case's references
resolve, how an answer is compared with what a case expects, and the plugin it writes, read back
as a host reads it. Tools are given as ``tools/list`` gives them; the replay itself runs against
a real server in tests/e2e/test_listing.py."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.listing import entries, plugin, review
from app.listing.entries import APP_FILE, ListingError, load

NOAUTH = [{"type": "noauth"}]
LINKED = [{"type": "oauth2", "scopes": ["notes.read"]}]


def tool(name: str, properties: dict[str, Any] | None = None, required: list[str] | None = None,
         security: list[dict[str, Any]] | None = None, visibility: list[str] | None = None
         ) -> dict[str, Any]:
    """A tool as tools/list lists it, with what `check` asks of one."""
    meta: dict[str, Any] = {"securitySchemes": security or NOAUTH}
    if visibility:
        meta["ui"] = {"visibility": visibility}
    return {"name": name, "inputSchema": {"type": "object", "properties": properties or {},
                                          "required": required or [],
                                          "additionalProperties": False},
            "outputSchema": {"type": "object"}, "securitySchemes": security or NOAUTH,
            "annotations": {"readOnlyHint": True, "destructiveHint": False,
                            "openWorldHint": False}, "_meta": meta}


TOOLS = [
    tool("greet", {"who": {"type": "string", "minLength": 1}}, ["who"]),
    tool("list_notes", {"limit": {"type": "integer", "minimum": 1, "maximum": 20}},
         security=LINKED),
    tool("delete_note", {"note_id": {"type": "string"}}, ["note_id"], security=LINKED),
    tool("note_details", {"note_id": {"type": "string"}}, ["note_id"], visibility=["app"]),
]

NOTES = """
prompts = ["Show my notes"]

[[cases]]
id = "mine"
prompt = "What notes do I have?"
tool = "list_notes"
arguments = { limit = 5 }
outcome = "The person's notes."

[[cases]]
prompt = "Delete the first one."
tool = "delete_note"
arguments = { note_id = "{mine.notes.0.id}" }
outcome = "It is gone."
"""

GREET = """
prompts = ["Say hello to Ada"]

[[cases]]
prompt = "Say hello to Ada."
tool = "greet"
arguments = { who = "Ada" }
outcome = "A greeting."
expect = { text = ["Hello, Ada"] }
"""


def features(tmp_path: Path, **listings: str) -> Path:
    root = tmp_path / "features"
    root.mkdir(exist_ok=True)
    for name, text in listings.items():
        (root / name).mkdir(parents=True)
        (root / name / "listing.toml").write_text(text, encoding="utf-8")
    return root


def problems_of(tmp_path: Path, **listings: str) -> list[str]:
    listing = load(features(tmp_path, **listings))
    return review.problems(listing, TOOLS, {}, "http://127.0.0.1:8000")


def test_a_listing_that_agrees_with_the_tools_has_no_problem(tmp_path: Path):
    assert problems_of(tmp_path, greet=GREET, notes=NOTES) == []


def test_a_wrong_argument_is_one_line_naming_the_file_the_case_and_the_argument(tmp_path: Path):
    found = problems_of(tmp_path, greet=GREET, notes=NOTES.replace("limit = 5", "limit = 50"))
    assert found == [f"{tmp_path}/features/notes/listing.toml, case 1: list_notes: argument "
                     "limit: 50 is greater than the maximum of 20"]


def test_what_a_case_gets_wrong_about_its_tool_is_said_per_case(tmp_path: Path):
    root = tmp_path / "features" / "notes" / "listing.toml"
    broken = NOTES.replace('arguments = { limit = 5 }', 'arguments = { limit = 5, colour = "red" }')
    broken += ('\n[[cases]]\nprompt = "Open it"\ntool = "note_details"\n'
               'arguments = { note_id = "x" }\noutcome = "Its details."\n'
               '\n[[cases]]\nprompt = "Who?"\ntool = "greet"\noutcome = "Asks who."\n'
               '\n[[cases]]\nprompt = "Notes, anonymously"\ntool = "list_notes"\n'
               'account = "anonymous"\noutcome = "The linking button."\n'
               '\n[[cases]]\nprompt = "Missing"\ntool = "no_such_tool"\noutcome = "Nothing."\n'
               '\n[[cases]]\nprompt = "Later"\ntool = "delete_note"\n'
               'arguments = { note_id = "{later.id}" }\noutcome = "Nothing."\n')
    found = problems_of(tmp_path, greet=GREET, notes=broken)
    assert found == [
        f"{root}, case 1: list_notes: it has no argument named colour",
        f"{root}, case 3: note_details is called by widgets only (ui.visibility): the model never "
        "chooses it, so no prompt can test it",
        f"{root}, case 4: greet: argument who is required and not given",
        f"{root}, case 5: list_notes needs a linked account: it cannot be replayed anonymously",
        f"{root}, case 6: no tool is named 'no_such_tool' (the server lists delete_note, greet, "
        "list_notes, note_details)",
        f"{root}, case 7: argument note_id: {{later...}} names no earlier case's id",
    ]


def test_every_tool_the_model_sees_needs_a_test_case(tmp_path: Path):
    # Without the notes feature's cases, its two model-visible tools are uncovered; the
    # widget-only note_details needs none.
    assert problems_of(tmp_path, greet=GREET) == [
        f"tool {name}: no test case: add one to the listing.toml of the feature that declares it"
        for name in ("delete_note", "list_notes")
    ]


def test_what_check_finds_in_the_descriptors_is_a_listing_problem(tmp_path: Path):
    listing = load(features(tmp_path, greet=GREET, notes=NOTES))
    without_hints = [{**t, "annotations": {}} if t["name"] == "greet" else t for t in TOOLS]
    found = review.problems(listing, without_hints, {}, "http://127.0.0.1:8000")
    assert found == [f"check: tool greet: annotation {hint} is missing"
                     for hint in ("readOnlyHint", "destructiveHint", "openWorldHint")]


def test_the_files_are_read_whole_and_every_problem_is_said_at_once(tmp_path: Path):
    root = features(tmp_path, notes='prompts = "one"\n[[cases]]\nprompt = ""\ntool = "x"\n'
                    'outcome = "y"\nid = "Bad Id"\ncolour = 1\naccount = "guest"\n'
                    'expect = { count = { notes = -1 }, maybe = true }\n'
                    'form = { key = "title" }\n',
                    broken="cases = [\n")
    with pytest.raises(ListingError) as raised:
        load(root)
    where = f"{tmp_path}/features"
    # tomllib's own words, which change with Python's version, after the file's name.
    assert raised.value.lines[0].startswith(f"{where}/broken/listing.toml: not TOML: ")
    assert raised.value.lines[1:] == [
        f"{where}/notes/listing.toml: `prompts` must be a list of texts",
        f"{where}/notes/listing.toml, case 1: `colour` is not a field of it (known: id, prompt, "
        "tool, arguments, outcome, account, expect, form)",
        f"{where}/notes/listing.toml, case 1: `prompt` must be a text that is not empty",
        f"{where}/notes/listing.toml, case 1: `id` 'Bad Id': lowercase letters, digits, - and _, "
        "starting with a letter (and not base_url)",
        f"{where}/notes/listing.toml, case 1: `account` 'guest': one of linked, anonymous",
        f"{where}/notes/listing.toml, case 1, expect: `maybe` is not a field of it (known: "
        "error, text, count, equals)",
        f"{where}/notes/listing.toml, case 1: `expect.count` must map paths to numbers of items "
        "(count = { animals = 3 })",
        f"{where}/notes/listing.toml, case 1: `form` must be a table of `key` (the question the "
        "tool asks) and `answer` (what the person fills in): form = { key = \"title\", answer = "
        "{ title = \"Lentil soup\" } }",
    ]


def test_the_app_file_holds_the_directorys_limits(tmp_path: Path):
    app = tmp_path / "app.toml"
    text = APP_FILE.read_text("utf-8")
    shutil.copyfile(APP_FILE.parent / "logo.svg", tmp_path / "logo.svg")
    app.write_text(text.replace('name = "ChatGPT App Server"', f'name = "{"N" * 31}"')
                   .replace('slug = "chatgpt-app-server"', 'slug = "Not A Slug"')
                   .replace('website = "/"', 'website = "http://example.com"'), encoding="utf-8")
    with pytest.raises(ListingError) as raised:
        load(features(tmp_path), app)
    assert raised.value.lines == [
        f"{app}: `name` has 31 characters, at most 30 are shown",
        f"{app}: `slug` 'Not A Slug': lowercase letters and digits, words joined by hyphens (it "
        "names the plugin)",
        f"{app}: `website` 'http://example.com': a path on this server (/privacy) or an https:// "
        "(or mailto:) address",
    ]


def test_the_shipped_app_file_is_a_listing():
    app = load(features_root := Path(__file__).parents[2] / "app" / "features").app
    assert features_root.is_dir() and len(app.name) <= entries.MAX_NAME
    assert "\n" not in app.long_description  # the TOML's wrapped lines, one paragraph


def test_references_take_an_earlier_answer_whole_or_inside_a_text():
    answers = {"mine": {"notes": [{"id": "n1", "size": 3}]}}
    assert review.resolve({"id": "{mine.notes.0.id}", "size": "{mine.notes.0.size}",
                           "url": "{base_url}/files/a.csv", "label": "note {mine.notes.0.id}!",
                           "list": ["{mine.notes.0.id}"], "n": 4},
                          "https://app.example", answers) == {
        "id": "n1", "size": 3, "url": "https://app.example/files/a.csv", "label": "note n1!",
        "list": ["n1"], "n": 4}
    assert review.at({"a": [{"b": 1}]}, "a.1.b") is None


def test_an_answer_is_compared_with_each_expectation(tmp_path: Path):
    (case,) = load(features(tmp_path, greet=GREET.replace(
        'expect = { text = ["Hello, Ada"] }',
        'expect = { text = ["Hello, Ada"], count = { "tags" = 2 }, equals = { "who" = "Ada" } }'
    ))).cases
    good = {"content": [{"type": "text", "text": "Hello, Ada!"}],
            "structuredContent": {"who": "Ada", "tags": ["a", "b"]}, "isError": False}
    assert review.compare(case, good) == []
    bad = {"content": [{"type": "text", "text": "Hi"}],
           "structuredContent": {"who": "Bob", "tags": ["a"]}}
    assert review.compare(case, bad) == [
        "the answer does not say 'Hello, Ada': Hi", "expected 2 items at tags, got 1",
        'expected who = "Ada", got "Bob"']
    failed = {"content": [{"type": "text", "text": "No one to greet."}], "isError": True}
    assert review.compare(case, failed) == ["expected an answer, got an error: No one to greet."]


def test_the_manifest_takes_one_starter_prompt_per_feature_first(tmp_path: Path):
    more = GREET.replace('prompts = ["Say hello to Ada"]', 'prompts = ["Hello Ada", "Hello Bob"]')
    listing = load(features(tmp_path, greet=more, notes=NOTES.replace(
        'prompts = ["Show my notes"]', 'prompts = ["Show my notes", "Delete a note"]')))
    assert listing.default_prompts() == ["Hello Ada", "Show my notes", "Hello Bob"]
    led = dataclasses.replace(listing, app=dataclasses.replace(listing.app, lead=("notes",)))
    assert led.default_prompts() == ["Show my notes", "Hello Ada", "Delete a note"]


SERVER = plugin.Server(base_url="https://app.example", mcp_url="https://app.example/mcp",
                       contact="help@app.example", account_page="https://app.example/account")


def written(tmp_path: Path) -> Path:
    listing = load(features(tmp_path, greet=GREET, notes=NOTES))
    dest = tmp_path / "plugin"
    plugin.write(dest, listing, TOOLS, {"greet": "Use `greet` to say hello."}, SERVER)
    return dest


def test_the_plugin_is_what_the_spec_describes_and_reads_back_clean(tmp_path: Path):
    dest = written(tmp_path)
    manifest = json.loads((dest / ".codex-plugin" / "plugin.json").read_text())
    assert manifest["extensions"] == {"com.openai": {"onboardingSkill": "./skills/setup/SKILL.md"}}
    assert manifest["skills"] == "./skills/" and manifest["mcpServers"] == "./.mcp.json"
    assert manifest["interface"]["privacyPolicyURL"] == "https://app.example/privacy"
    assert manifest["interface"]["supportURL"] == "mailto:help@app.example"
    assert json.loads((dest / ".mcp.json").read_text()) == {
        "mcpServers": {"chatgpt-app-server": {"type": "http", "url": "https://app.example/mcp"}}}
    skill = (dest / "skills" / "setup" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: setup\ndescription: ")
    assert "These need the person's account: delete_note, list_notes." in skill
    assert "These tools work without an account: greet." in skill  # note_details: widgets only
    assert "https://app.example/account" in skill and "- Say hello to Ada" in skill
    assert plugin.problems(dest) == []


def test_a_plugin_a_host_would_refuse_is_said_line_by_line(tmp_path: Path):
    dest = written(tmp_path)
    path = dest / ".codex-plugin" / "plugin.json"
    manifest = json.loads(path.read_text())
    manifest["interface"]["defaultPrompt"] = ["a", "b", "c", "d"]
    manifest["extensions"]["com.openai"]["onboardingSkill"] = "./skills/../../setup.md"
    manifest["interface"]["logo"] = "./assets/missing.svg"
    path.write_text(json.dumps(manifest))
    (dest / "skills" / "setup" / "SKILL.md").write_text("# no front matter\n")
    assert plugin.problems(dest) == [
        "plugin: interface.defaultPrompt must hold 1 to 3 prompts of at most 128 characters",
        "plugin: interface.logo './assets/missing.svg' is not in the plugin",
        "plugin: extensions[\"com.openai\"].onboardingSkill './skills/../../setup.md' must stay "
        "inside the plugin",
    ]
    manifest["extensions"]["com.openai"]["onboardingSkill"] = "./skills/setup/SKILL.md"
    path.write_text(json.dumps(manifest))
    assert plugin.problems(dest)[-1] == ("plugin: ./skills/setup/SKILL.md must open with front "
                                         "matter between --- lines")


def test_dates_written_bare_in_toml_are_refused_in_one_line(tmp_path: Path):
    with pytest.raises(ListingError) as raised:
        load(features(tmp_path, greet=GREET.replace('arguments = { who = "Ada" }',
                                                    'arguments = { who = 2026-06-01 }')))
    assert raised.value.lines == [
        f"{tmp_path}/features/greet/listing.toml, case 1: `arguments` holds a TOML date or time: "
        'write it in quotes, as the tool receives it ("2026-06-01")']


def test_a_server_whose_tools_cannot_be_read_is_said_per_tool(tmp_path: Path):
    listing = load(features(tmp_path, greet=GREET))
    broken = [{"inputSchema": {}}, {**TOOLS[0], "inputSchema": {"type": "objet"}},
              {**TOOLS[1], "inputSchema": {"$ref": "#/$defs/Missing"}}, TOOLS[2]]
    assert review.problems(listing, broken, {}, "http://127.0.0.1:8000") == [
        "tools/list: tool 1 has no name",
        "tool greet: its inputSchema is not a JSON Schema arguments can be checked against "
        "(SchemaError)",
        "tool list_notes: its inputSchema is not a JSON Schema arguments can be checked against "
        "(_WrappedReferencingError)",
    ]


@dataclass
class Answer:
    """An HTTP answer as httpx streams it, for a server the test plays."""

    status_code: int
    body: str
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})

    def iter_bytes(self) -> Iterator[bytes]:
        data = self.body.encode()
        yield from (data[i:i + 7] for i in range(0, len(data), 7))


@dataclass
class PlayedServer:
    """Answers each tools/call with the next of ``answers``; keeps what it was sent."""

    answers: list[Answer]
    sent: list[dict[str, Any]] = field(default_factory=list)

    @contextmanager
    def stream(self, method: str, url: str, *, json: Any,
               headers: dict[str, str]) -> Iterator[Answer]:
        self.sent.append({"arguments": json["params"]["arguments"], "headers": headers})
        yield self.answers.pop(0)


def _result(structured: dict[str, Any], text: str = "done") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": text}], "structuredContent": structured}})


def test_the_replay_says_what_the_server_did_in_words(tmp_path: Path):
    listing = load(features(tmp_path, notes=NOTES, greet=GREET))
    server = PlayedServer([
        Answer(200, "data:\n\ndata: " + _result({"who": "Ada"}, "Hello, Ada!") + "\n\n",
               {"content-type": "text/event-stream"}),  # a priming event first, as the SDK's
        Answer(401, '{"error": "invalid_token"}'),
        Answer(200, _result({"notes": []})),
    ])
    outcomes = review.replay(listing, TOOLS, server, "http://s/mcp", "http://s", lambda: "tok")
    assert [(o.case.tool, o.ok, o.detail) for o in outcomes] == [
        ("greet", True, "Hello, Ada!"),
        ("list_notes", False, "no answer: the server refused the account's token (HTTP 401): "
                              "sign in again, or give a fresh LISTING_TOKEN"),
        ("delete_note", False, "not replayed: it needs the answer of case mine, which did not "
                               "come"),
    ]
    assert server.sent[1]["headers"]["authorization"] == "Bearer tok"
    assert "authorization" not in server.sent[0]["headers"]  # greet needs no account


def test_a_reference_to_a_path_the_answer_lacks_is_not_sent(tmp_path: Path):
    listing = load(features(tmp_path, notes=NOTES, greet=GREET))
    server = PlayedServer([Answer(200, _result({"who": "Ada"}, "Hello, Ada")),
                           Answer(200, _result({"notes": []}))])
    outcomes = review.replay(listing, TOOLS, server, "http://s/mcp", "http://s", lambda: "tok")
    assert outcomes[2].detail == "not replayed: no value at mine.notes.0.id in that case's answer"
    assert len(server.sent) == 2  # delete_note was never called with the reference's text


def test_an_answer_past_its_size_is_cut_off_in_words(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(review, "MAX_ANSWER", 64)
    listing = load(features(tmp_path, greet=GREET))
    server = PlayedServer([Answer(200, _result({"who": "Ada" * 40}))])
    (first,) = review.replay(listing, TOOLS, server, "http://s/mcp", "http://s", lambda: "t")
    assert (first.ok, first.detail) == (False, "no answer: the answer is larger than 64 bytes")


def test_what_a_server_wrote_is_printed_without_escapes_or_echoed_secrets():
    from app.listing.command import printable

    line = "  wrong: \x1b]0;pwned\x07\x1b[2Jok token tok-123 ünïcode\u202e"
    assert printable(line, ["tok-123"]) == "  wrong: ]0;pwned[2Jok token [hidden] ünïcode"
