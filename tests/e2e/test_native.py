"""ChatGPT's native surface over real HTTP on two server processes that share a database, a public
URL and APP_REQUEST_STATE_KEYS, as two replicas behind a load balancer.

Forms that ask instead of failing (app/mcp/forms.py): the question asked by one is answered on
the other. ``save_recipe`` without a title asks for it; ``delete_saved_recipe`` without an id lets
the person pick one of their own recipes; clients that cannot show the form get a result telling
the model what to ask instead. Composer @-mentions and each account's settings
(app/mcp/settings.py, app/preferences), set on one replica and used on the other."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.e2e.oauth_client import (
    CHATGPT_REDIRECT,
    Browser,
    Pkce,
    authorize_params,
    code_grant,
    query_of,
    token,
)
from tests.e2e.server import LiveServer, free_port
from tests.filehost import FileServer, serving_files
from tests.wording import assert_readable

pytestmark = [pytest.mark.demo("recipes", "files", "cafes", "zoo", "search"),
              pytest.mark.authserver, pytest.mark.any_database]
SCOPE = "recipes.write files.write"
PASSWORD = "demo-password"
KEYS = ",".join(secrets.token_urlsafe(32) for _ in range(2))
FORM_CAPABLE = {"elicitation": {"form": {}}, "extensions": {"openai/elicitation": {"form": {}}}}


@dataclass
class Pair:
    a: LiveServer
    b: LiveServer
    public: str

    @property
    def resource(self) -> str:
        return f"{self.public}/mcp"


@pytest.fixture(scope="module")
def files() -> Iterator[FileServer]:
    with serving_files() as server:
        yield server


@pytest.fixture(scope="module")
def pair(database_url: str, tmp_path_factory: pytest.TempPathFactory, files: FileServer,
         ) -> Iterator[Pair]:
    public = f"http://127.0.0.1:{free_port()}"
    tmp = tmp_path_factory.mktemp("forms")
    env = {"APP_BASE_URL": public, "APP_VAR_DIR": str(tmp / "var"), "APP_REQUEST_STATE_KEYS": KEYS,
           "APP_STORAGE_DIR": str(tmp / "storage"),  # one store for both, as a bucket would be
           "APP_OUTBOUND_ALLOWLIST": files.origin.removeprefix("http://")}
    a = LiveServer(database_url, tmp / "a.log", extra_env=env)
    b = LiveServer(database_url, tmp / "b.log", extra_env=env)
    a.start()  # the first writes the signing keys; the second reads them
    try:
        b.start()
        yield Pair(a, b, public)
    finally:
        a.stop()
        b.stop()


@pytest.fixture(scope="module")
def tokens(pair: Pair) -> dict[str, str]:
    """An access token of alice's and one of bob's, each linked through server A."""
    found = {}
    for username in ("alice", "bob"):
        client = httpx.post(f"{pair.a.base_url}/register", timeout=15, json={
            "redirect_uris": [CHATGPT_REDIRECT], "token_endpoint_auth_method": "none",
            "scope": SCOPE})
        assert client.status_code == 201, client.text
        client_id, pkce = client.json()["client_id"], Pkce.new()
        location = Browser(pair.a.base_url).sign_in(
            authorize_params(client_id, pkce, pair.resource, scope=SCOPE), username,
            PASSWORD)
        issued = token(pair.a.base_url, code_grant(query_of(location)["code"], pkce, pair.resource,
                                                   client_id=client_id))
        assert issued.status_code == 200, issued.text
        found[username] = issued.json()["access_token"]
    return found


def rpc(server: LiveServer, method: str, params: dict[str, Any], bearer: str | None = None, *,
        version: str = "2026-07-28", capabilities: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None) -> httpx.Response:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": version}
    if bearer:
        headers["authorization"] = f"Bearer {bearer}"
    if version == "2026-07-28":
        headers["mcp-method"] = method
        if method in ("tools/call", "resources/read"):
            headers["mcp-name"] = params["name" if method == "tools/call" else "uri"]
        params = {**params, "_meta": {
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientInfo": {"name": "forms-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": (
                FORM_CAPABLE if capabilities is None else capabilities)}}
    if meta:
        params = {**params, "_meta": {**params.get("_meta", {}), **meta}}
    return httpx.post(server.mcp_url, headers=headers, timeout=30,
                      json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def call(server: LiveServer, name: str, arguments: dict[str, Any], bearer: str | None = None,
         **more: Any) -> httpx.Response:
    extra = {k: v for k, v in more.items() if k in ("inputResponses", "requestState")}
    options = {k: v for k, v in more.items() if k not in extra}
    return rpc(server, "tools/call", {"name": name, "arguments": arguments, **extra}, bearer,
               **options)


def result_of(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert_readable(result)
    return result


def asked(response: httpx.Response, key: str) -> tuple[dict[str, Any], str]:
    """The form a call answered with (its OpenAI schema) and the sealed state to send back."""
    result = result_of(response)
    assert result["resultType"] == "input_required", result
    request = result["inputRequests"][key]
    assert request["method"] == "elicitation/create"
    schema = request["params"]["_meta"]["openai/elicitation"]["requestedSchema"]
    return schema, result["requestState"]


def accepted(key: str, content: dict[str, Any]) -> dict[str, Any]:
    return {key: {"action": "accept", "content": content}}


def saved_titles(server: LiveServer, bearer: str) -> list[str]:
    listed = result_of(call(server, "list_saved_recipes", {}, bearer))
    return [r["title"] for r in listed["structuredContent"]["recipes"]]


def test_a_form_is_asked_in_the_persons_language(pair, tokens):
    """Its heading and its fields' labels in French, where ChatGPT's locale is French; what the
    fields are and the rules they keep do not change (the answer is validated the same)."""
    french = {"openai/locale": "fr-FR"}
    response = call(pair.a, "save_recipe", {}, tokens["alice"], meta=french)
    form, state = asked(response, "title")
    message = result_of(response)["inputRequests"]["title"]["params"]["message"]
    assert message == "Quelle recette faut-il enregistrer\u00a0?"
    assert form["properties"]["title"]["title"] == "Titre de la recette"
    assert form["properties"]["source_url"]["title"] == "Lien (facultatif)"
    assert form["required"] == ["title"] and form["properties"]["title"]["maxLength"] == 200
    refused = result_of(call(pair.b, "save_recipe", {}, tokens["alice"], meta=french,
                             inputResponses={"title": {"action": "decline"}},
                             requestState=state))
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == "Rien n’a été enregistré\u00a0: aucun titre n’a été indiqué."


def test_a_recipe_without_a_title_is_asked_on_one_server_and_saved_once_on_the_other(pair, tokens):
    alice = tokens["alice"]
    title = f"Forms soup {secrets.token_hex(3)}"
    link = "https://example.com/forms-soup"
    form, state = asked(call(pair.a, "save_recipe", {"source_url": link}, alice), "title")
    assert form["required"] == ["title"]
    assert form["properties"]["source_url"]["default"] == link  # the link the call gave, prefilled
    answer = accepted("title", {"title": title, "source_url": link})
    first = result_of(call(pair.b, "save_recipe", {"source_url": link}, alice,
                           inputResponses=answer, requestState=state))
    assert first["structuredContent"]["created"] is True, first
    assert first["content"][0]["text"] == f"Saved “{title}” to your recipes."
    again = result_of(call(pair.b, "save_recipe", {"source_url": link}, alice,
                           inputResponses=answer, requestState=state))
    assert again["structuredContent"]["created"] is False  # the retry sent twice: one recipe
    assert saved_titles(pair.a, alice).count(title) == 1


def test_an_empty_title_is_asked_for_too(pair, tokens):
    form, _ = asked(call(pair.a, "save_recipe", {"title": "   "}, tokens["alice"]), "title")
    assert form["properties"]["title"]["minLength"] == 1


def test_a_state_changed_on_the_way_or_sealed_for_another_account_is_refused(pair, tokens):
    _, state = asked(call(pair.a, "save_recipe", {}, tokens["alice"]), "title")
    answer = accepted("title", {"title": "Not saved", "source_url": ""})
    middle = len(state) // 2
    flipped = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    for bearer, sent in ((tokens["alice"], flipped), (tokens["bob"], state)):
        refused = call(pair.b, "save_recipe", {}, bearer, inputResponses=answer, requestState=sent)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["data"] == {"reason": "invalid_request_state"}
    assert "Not saved" not in saved_titles(pair.a, tokens["bob"])
    assert "Not saved" not in saved_titles(pair.a, tokens["alice"])


def test_an_answer_without_the_state_of_its_question_is_not_used(pair, tokens):
    answer = accepted("title", {"title": "Unsealed", "source_url": ""})
    result = result_of(call(pair.a, "save_recipe", {}, tokens["alice"], inputResponses=answer))
    assert result["isError"] is True
    assert "came without the question it answers" in result["content"][0]["text"]
    assert "Unsealed" not in saved_titles(pair.a, tokens["alice"])


def test_a_declined_form_saves_nothing_and_tells_the_model_not_to_insist(pair, tokens):
    _, state = asked(call(pair.a, "save_recipe", {}, tokens["alice"]), "title")
    declined = result_of(call(pair.b, "save_recipe", {}, tokens["alice"],
                              inputResponses={"title": {"action": "decline"}}, requestState=state))
    assert declined["isError"] is True
    assert [c["text"] for c in declined["content"]] == [
        "Nothing was saved: no title was given.",
        "The user chose not to answer the form, so nothing was done: do not call this tool again "
        "for it unless the user asks to."]


def test_the_picker_offers_the_accounts_own_recipes_and_deletes_the_one_picked(pair, tokens):
    alice, bob = tokens["alice"], tokens["bob"]
    mine = f"Alice's pick {secrets.token_hex(3)}"
    theirs = f"Bob's own {secrets.token_hex(3)}"
    kept = result_of(call(pair.a, "save_recipe", {"title": mine}, alice))["structuredContent"]
    result_of(call(pair.a, "save_recipe", {"title": theirs}, bob))
    form, state = asked(call(pair.a, "delete_saved_recipe", {}, alice), "recipe")
    offered = {o["uri"]: o["title"]
               for o in form["properties"]["choice"]["x-openai-input"]["options"]}
    uri = f"app://recipes/{kept['recipe']['id']}"
    assert offered[uri] == mine
    assert theirs not in offered.values()
    bobs_form, _ = asked(call(pair.a, "delete_saved_recipe", {}, bob), "recipe")
    bobs = [o["title"] for o in bobs_form["properties"]["choice"]["x-openai-input"]["options"]]
    assert theirs in bobs and mine not in bobs
    # Bob's recipe sent as alice's answer: a delete acts on the caller's own recipes only, so it
    # deletes nothing (a choice of this kind no longer offered is taken as one a first copy of
    # the same retry already deleted: forms.still_offered).
    bobs_uri = next(o["uri"] for o in bobs_form["properties"]["choice"]["x-openai-input"]["options"]
                    if o["title"] == theirs)
    forged = result_of(call(pair.b, "delete_saved_recipe", {}, alice,
                            inputResponses=accepted("recipe", {"choice": bobs_uri}),
                            requestState=state))
    assert forged["structuredContent"]["deleted"] is False
    assert theirs in saved_titles(pair.a, bob)
    answer = accepted("recipe", {"choice": uri})
    done = result_of(call(pair.b, "delete_saved_recipe", {}, alice, inputResponses=answer,
                          requestState=state))
    assert done["structuredContent"] == {"deleted": True, "recipe_id": kept["recipe"]["id"]}
    assert mine not in saved_titles(pair.a, alice)
    # The same retry again (a client that did not see the first answer): nothing left to delete.
    again = result_of(call(pair.a, "delete_saved_recipe", {}, alice, inputResponses=answer,
                           requestState=state))
    assert again["structuredContent"] == {"deleted": False, "recipe_id": kept["recipe"]["id"]}


def test_a_saved_recipe_is_a_resource_its_owner_alone_reads(pair, tokens):
    alice, bob = tokens["alice"], tokens["bob"]
    title = f"Readable {secrets.token_hex(3)}"
    rid = result_of(call(pair.a, "save_recipe", {"title": title}, alice))["structuredContent"][
        "recipe"]["id"]
    uri = f"app://recipes/{rid}"
    read = result_of(rpc(pair.b, "resources/read", {"uri": uri}, alice))
    [content] = read["contents"]
    assert content["mimeType"] == "application/json"
    assert '"title": "' + title + '"' in content["text"]
    foreign = rpc(pair.b, "resources/read", {"uri": uri}, bob)
    missing = rpc(pair.b, "resources/read", {"uri": "app://recipes/rcp_0000000000000000"}, bob)
    assert foreign.json()["error"] == {
        **missing.json()["error"], "message": f"Unknown resource: {uri}", "data": {"uri": uri}}
    anonymous = rpc(pair.b, "resources/read", {"uri": uri}).json()["error"]
    assert anonymous["message"] == ("Saved recipe needs the user's account: ask the user to "
                                    "connect (sign in to) this app.")
    [challenge] = anonymous["data"]["mcp/www_authenticate"]
    assert challenge.startswith('Bearer resource_metadata="')
    assert 'scope="recipes.read"' in challenge


@pytest.mark.parametrize("version,capabilities", [
    ("2025-06-18", None),
    ("2026-07-28", {"elicitation": {"form": {}}}),  # no OpenAI form capability
])
def test_a_client_that_cannot_show_the_form_is_told_what_to_ask(pair, tokens, version,
                                                                capabilities):
    result = result_of(call(pair.a, "save_recipe", {}, tokens["alice"], version=version,
                            capabilities=capabilities))
    assert result["isError"] is True
    assert [c["text"] for c in result["content"]] == [
        "Saving a recipe needs its title, and none was given.",
        "Ask the user for the recipe's title, then call save_recipe again with `title` set to it "
        "(and `source_url` if they gave a link)."]
    for tool, instead in (
            ("delete_saved_recipe", "call delete_saved_recipe again with `recipe_id`"),
            ("delete_file", "call delete_file again with `file_id` set to its id"),
            ("compare_files", "call compare_files again with them in `files`")):
        picked = result_of(call(pair.a, tool, {}, tokens["alice"], version=version,
                                capabilities=capabilities))
        assert picked["isError"] is True, (tool, picked)
        assert instead in picked["content"][1]["text"], (tool, picked)


def kept(pair: Pair, files: FileServer, bearer: str, name: str, body: bytes) -> str:
    """A CSV analysed while signed in: kept in the library; its id."""
    file = {"download_url": files.offer(body, "text/csv", name=name), "file_id": f"file-{name}",
            "mime_type": "text/csv", "file_name": name}
    result = result_of(call(pair.a, "analyze_file", {"file": file}, bearer))
    assert result["structuredContent"]["file"]["saved"] is True, result
    return result["structuredContent"]["file"]["id"]


def options(form: dict[str, Any], field: str) -> dict[str, str]:
    return {o["uri"]: o["name"] for o in form["properties"][field]["x-openai-input"]["options"]}


def test_files_are_compared_and_deleted_through_pickers_of_the_accounts_own_library(
        pair, tokens, files):
    alice, bob = tokens["alice"], tokens["bob"]
    tag = secrets.token_hex(3)
    first = kept(pair, files, alice, f"tides-{tag}.csv", b"day,height\n1,2.5\n2,3.1\n")
    second = kept(pair, files, alice, f"levels-{tag}.csv", b"day,level\n1,7\n")
    bobs = kept(pair, files, bob, f"bob-{tag}.csv", b"a,b\n1,2\n")
    form, state = asked(call(pair.a, "compare_files", {}, alice), "files")
    offered = options(form, "choices")
    assert {f"app://files/{first}", f"app://files/{second}"} <= set(offered)
    assert f"app://files/{bobs}" not in offered  # never another account's
    assert form["properties"]["choices"]["minItems"] == 2
    # Bob's file among alice's picks: refused, nothing compared.
    forged = result_of(call(pair.b, "compare_files", {}, alice, requestState=state,
                            inputResponses=accepted("files", {"choices": [
                                f"app://files/{first}", f"app://files/{bobs}"]})))
    assert forged["content"][0]["text"].startswith("The answer does not fit the form")
    picked = [f"app://files/{first}", f"app://files/{second}"]
    compared = result_of(call(pair.b, "compare_files", {}, alice, requestState=state,
                              inputResponses=accepted("files", {"choices": picked})))
    assert [f["file"]["id"] for f in compared["structuredContent"]["files"]] == [first, second]
    assert compared["structuredContent"]["comparison"]["shared_columns"] == ["day"]
    # Bob's picker of files to delete: his file, none of alice's; his pick deletes his file only.
    bobs_form, bobs_state = asked(call(pair.a, "delete_file", {}, bob), "file")
    assert set(options(bobs_form, "choice")) == {f"app://files/{bobs}"}
    # Alice's file as bob's answer: his delete finds no such file of his; hers stays.
    forged = result_of(call(pair.b, "delete_file", {}, bob, requestState=bobs_state,
                            inputResponses=accepted("file", {"choice": f"app://files/{first}"})))
    assert forged["structuredContent"] == {"deleted": False, "file_id": first}
    answer = accepted("file", {"choice": f"app://files/{bobs}"})
    done = result_of(call(pair.b, "delete_file", {}, bob, requestState=bobs_state,
                          inputResponses=answer))
    assert done["structuredContent"] == {"deleted": True, "file_id": bobs}
    again = result_of(call(pair.a, "delete_file", {}, bob, requestState=bobs_state,
                           inputResponses=answer))  # the retry sent twice: done once
    assert again["structuredContent"] == {"deleted": False, "file_id": bobs}
    read = result_of(rpc(pair.b, "resources/read", {"uri": f"app://files/{first}"}, alice))
    assert f"tides-{tag}.csv" in read["contents"][0]["text"]
    foreign = rpc(pair.b, "resources/read", {"uri": f"app://files/{first}"}, bob).json()["error"]
    assert foreign["message"] == f"Unknown resource: app://files/{first}"


def test_an_anonymous_comparison_without_files_is_told_to_ask_for_them(pair):
    result = result_of(call(pair.a, "compare_files", {}))
    assert result["isError"] is True
    assert [c["text"] for c in result["content"]] == [
        "Comparing files needs 2 to 5 files, and none were given.",
        "Ask the user to attach the files to compare (2 to 5), then call compare_files again with "
        "them in `files`."]


def test_cafes_without_any_city_ask_for_one_with_the_known_cities_suggested(pair):
    form, state = asked(call(pair.a, "recommend_cafe", {}), "city")
    suggested = [s["const"] for s in form["properties"]["city"]["x-openai-suggestions"]]
    assert "Paris" in suggested and suggested == sorted(suggested)
    found = result_of(call(pair.b, "recommend_cafe", {}, requestState=state,
                           inputResponses=accepted("city", {"city": "Paris"})))
    assert found["structuredContent"]["city"] == "Paris"
    assert len(found["structuredContent"]["cafes"]) == 4
    named = result_of(call(pair.a, "recommend_cafe", {"city": "Lisbon"}))  # no question: named
    assert named["structuredContent"]["city"] == "Lisbon"


def test_cafes_on_a_client_without_forms_come_from_the_locale_with_a_way_to_ask(pair):
    result = result_of(call(pair.a, "recommend_cafe", {}, version="2025-06-18"))
    assert result["structuredContent"]["city"] == "New York"
    assert result["content"][0]["text"].endswith(
        "(The user's city is not known. If they are not in New York, ask which city, then call "
        "recommend_cafe again with `city` set to it.)")


EXTENSIONS = {"openai/mentions": {"searchTool": "search_mentions"},
              "openai/settings": {"readTool": "read_settings", "updateTool": "update_settings"}}


def test_mentions_and_settings_are_advertised_on_both_eras(pair):
    discovered = result_of(rpc(pair.a, "server/discover", {}))
    extensions = discovered["capabilities"]["extensions"]
    assert {k: extensions[k] for k in EXTENSIONS} == EXTENSIONS
    initialized = httpx.post(pair.a.mcp_url, timeout=15, headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "forms-test", "version": "1"}}}).json()["result"]
    experimental = initialized["capabilities"]["experimental"]
    assert {k: experimental[k] for k in EXTENSIONS} == EXTENSIONS
    tools = {t["name"]: t for t in result_of(rpc(pair.a, "tools/list", {}))["tools"]}
    assert tools["read_settings"]["annotations"]["readOnlyHint"] is True
    assert tools["read_settings"]["inputSchema"].get("required", []) == []
    assert set(tools["read_settings"]["outputSchema"]["required"]) == {"schema", "values"}
    assert tools["update_settings"]["inputSchema"]["required"] == ["set"]
    mentions = tools["search_mentions"]
    assert mentions["_meta"]["ui"]["visibility"] == ["app"]
    assert mentions["annotations"]["readOnlyHint"] is True


def test_mentions_offer_the_accounts_own_items_and_public_pages_only(pair, tokens, files):
    alice, bob = tokens["alice"], tokens["bob"]
    tag = secrets.token_hex(3)
    mine = result_of(call(pair.a, "save_recipe", {"title": f"Mention tart {tag}"}, alice))
    result_of(call(pair.a, "save_recipe", {"title": f"Mention pie {tag}"}, bob))
    kept(pair, files, alice, f"mention-{tag}.csv", b"a,b\n1,2\n")

    def found(bearer: str | None, query: str) -> list[dict[str, Any]]:
        answer = result_of(call(pair.b, "search_mentions", {"query": query}, bearer))
        return answer["structuredContent"]["items"]

    hers = {i["uri"]: i["title"] for i in found(alice, tag)}
    assert hers[f"app://recipes/{mine['structuredContent']['recipe']['id']}"] == (
        f"Mention tart {tag}")
    assert f"mention-{tag}.csv" in hers.values()
    assert f"Mention pie {tag}" not in hers.values()  # bob's
    assert [i["title"] for i in found(bob, tag)] == [f"Mention pie {tag}"]  # none of alice's
    pages = found(alice, "json dumps")  # the public pages come along
    assert pages and all(i["uri"].startswith("https://") for i in pages)
    # Read as a resource by its owner; bob's read of the same URI finds nothing.
    uri = next(u for u, t in hers.items() if t == f"mention-{tag}.csv")
    assert f"mention-{tag}.csv" in result_of(rpc(pair.a, "resources/read", {"uri": uri}, alice))[
        "contents"][0]["text"]
    assert rpc(pair.a, "resources/read", {"uri": uri}, bob).json()["error"]["message"] == (
        f"Unknown resource: {uri}")


@pytest.mark.parametrize("version", ["2026-07-28", "2025-06-18"])
@pytest.mark.parametrize("tool,arguments", [("search_mentions", {"query": "json"}),
                                            ("read_settings", {}),
                                            ("update_settings", {"set": {"zoo_count": 3}})])
def test_anonymous_mentions_and_settings_are_told_to_link_the_account(pair, version, tool,
                                                                      arguments):
    # ChatGPT (its openai/* request _meta) is answered with the challenge in the tool result...
    chatgpt = {"openai/locale": "en-US"}
    refused = result_of(call(pair.a, tool, arguments, version=version, meta=chatgpt))
    assert refused["isError"] is True
    [challenge] = refused["_meta"]["mcp/www_authenticate"]
    assert challenge.startswith('Bearer resource_metadata="')
    person, model = refused["content"]
    assert person["text"].endswith("needs your account: connect (sign in to) this app to use it.")
    assert person["annotations"]["audience"] == ["user", "assistant"]
    assert model == {"type": "text", "annotations": {"audience": ["assistant"]},
                     "text": "Ask the user to connect (sign in to) this app, then try again."}
    # ...any other client with HTTP 401 and the same challenge, as MCP's authorization spec says.
    plain = call(pair.a, tool, arguments, version=version)
    assert plain.status_code == 401
    assert plain.headers["www-authenticate"].startswith('Bearer resource_metadata="')


def settings_of(server: LiveServer, bearer: str, **options: Any) -> dict[str, Any]:
    return result_of(call(server, "read_settings", {}, bearer, **options))["structuredContent"]


def update(server: LiveServer, bearer: str, changes: dict[str, Any], **options: Any,
           ) -> dict[str, Any]:
    return result_of(call(server, "update_settings", {"set": changes}, bearer, **options))


@pytest.mark.parametrize("version", ["2026-07-28", "2025-06-18"])
def test_a_home_city_set_on_one_replica_is_alices_cafe_city_on_the_other(pair, tokens,
                                                                        version):
    alice, bob = tokens["alice"], tokens["bob"]
    era = {"version": version}
    before = settings_of(pair.a, alice, **era)
    assert before["values"]["home_city"] == "" and before["values"]["zoo_count"] == 10
    assert before["schema"]["properties"]["home_city"]["title"] == "Home city"
    sections = {g["title"]: g["items"] for g in before["layout"]}
    assert {"kind": "property", "property": "home_city"} in sections["Cafés"]
    assert {"kind": "tool", "tool": "list_files"} in sections["Files"]
    try:
        changed = update(pair.a, alice, {"home_city": "Lisbon", "zoo_count": 3}, **era)
        assert changed["structuredContent"]["values"]["home_city"] == "Lisbon"
        assert changed["content"][0]["text"] == (
            'Saved: Home city (home_city): "Lisbon"; Animals to list (zoo_count): 3.')
        assert settings_of(pair.b, alice, **era)["values"]["zoo_count"] == 3
        # No city named and no location shared (a client without forms: no question either).
        cafes = result_of(call(pair.b, "recommend_cafe", {}, alice, version="2025-06-18"))
        assert cafes["structuredContent"]["city"] == "Lisbon"
        assert "is not known" not in cafes["content"][0]["text"]
        named = result_of(call(pair.b, "recommend_cafe", {"city": "Paris"}, alice, **era))
        assert named["structuredContent"]["city"] == "Paris"  # the call's own argument wins
        theirs = result_of(call(pair.b, "recommend_cafe", {}, bob, version="2025-06-18"))
        assert theirs["structuredContent"]["city"] == "New York"
        zoo = result_of(call(pair.b, "get_zoo_animals", {}, alice, **era))
        assert len(zoo["structuredContent"]["animals"]) == 3
        assert len(result_of(call(pair.b, "get_zoo_animals", {}, bob, **era))[
            "structuredContent"]["animals"]) == 10
    finally:
        update(pair.b, alice, {"home_city": "", "zoo_count": 10}, **era)
    assert settings_of(pair.a, alice, **era)["values"]["home_city"] == ""


def test_a_setting_out_of_range_or_nothing_to_set_changes_nothing_and_says_why(pair, tokens):
    alice = tokens["alice"]
    wrong = update(pair.a, alice, {"zoo_count": 50, "home_city": "Oslo"})
    assert wrong["isError"] is True
    assert "zoo_count" in wrong["content"][0]["text"], wrong
    unknown = update(pair.a, alice, {"shoe_size": 44})
    assert unknown["isError"] is True
    nothing = update(pair.a, alice, {})
    assert nothing["isError"] is True
    assert nothing["content"][0]["text"] == "Nothing was changed: no setting was given."
    assert settings_of(pair.a, alice)["values"]["home_city"] == ""  # nothing of the first kept


def test_entrypoints_are_typed_on_the_tools_and_no_widget_offers_pip(pair):
    tools = {t["name"]: t for t in result_of(rpc(pair.a, "tools/list", {}))["tools"]}
    ui = {name: t["_meta"]["openai/ui"]["entrypoints"] for name, t in tools.items()
          if "openai/ui" in t["_meta"]}
    [files] = ui["list_files"]
    assert files["type"] == "global"
    assert files["quickAction"]["title"] == "My files"
    assert files["quickAction"]["target"] == {"type": "tool", "name": "list_files"}
    [icon] = files["quickAction"]["icons"]
    assert icon["src"].startswith("data:image/svg+xml;base64,")
    assert icon["mimeType"] == "image/svg+xml"
    [recipes] = ui["list_saved_recipes"]
    assert recipes["quickAction"]["target"]["name"] == "save_recipe"
    assert ui["get_zoo_animals"] == [{"type": "thread"}]
    assert ui["recommend_cafe"] == [{"type": "thread"}]
    for name in ("list_files", "list_saved_recipes", "get_zoo_animals", "recommend_cafe"):
        assert not tools[name]["inputSchema"].get("required"), name  # the host calls them with {}
    widgets = result_of(rpc(pair.a, "resources/list", {}))["resources"]
    for widget in (w for w in widgets if w["uri"].startswith("ui://")):
        [content] = result_of(rpc(pair.a, "resources/read", {"uri": widget["uri"]}))["contents"]
        assert content["_meta"]["openai/ui"]["availableDisplayModes"] == ["inline", "fullscreen"]


def test_a_quick_action_opens_its_widget(pair, tokens):
    """What ChatGPT does with a quick action: the target tool with its fixed arguments; the
    result names the widget the host opens full screen."""
    tools = {t["name"]: t for t in result_of(rpc(pair.a, "tools/list", {}))["tools"]}
    [entry] = tools["list_files"]["_meta"]["openai/ui"]["entrypoints"]
    target = entry["quickAction"]["target"]
    opened = result_of(call(pair.a, target["name"], target.get("arguments") or {},
                            tokens["alice"]))
    assert opened["isError"] is False and "files" in opened["structuredContent"]
    assert tools[target["name"]]["_meta"]["ui"]["resourceUri"].startswith("ui://widget/files-")
