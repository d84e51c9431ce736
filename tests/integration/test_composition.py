"""What the composition root wires from each feature: routes, instructions; and how routes fail."""

from __future__ import annotations

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app.feature import Deps, Feature
from app.main import create_app


def _routes(deps: Deps) -> list[Route]:
    async def hello(_: Request) -> JSONResponse:
        return JSONResponse({"base": deps.settings.base_url})

    async def crash(_: Request) -> JSONResponse:
        raise RuntimeError("secret internals")

    return [Route("/hello", hello), Route("/crash", crash)]


FEATURES = [Feature(name="alpha", instructions="Use alpha for A.", routes=_routes),
            Feature(name="beta", instructions="Use beta for B.")]


def test_feature_routes_are_served_and_their_sentences_join_the_instructions(settings):
    with TestClient(create_app(settings, features=FEATURES), base_url=settings.base_url) as client:
        hello = client.get("/hello", headers={"authorization": "Bearer not-checked-here"})
        init = client.post("/mcp", headers={"accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})
    assert hello.status_code == 200 and hello.json() == {"base": settings.base_url}
    assert init.json()["result"]["instructions"] == ("Use alpha for A. Use beta for B. Results render in widgets; "
                                                     "do not repeat what a widget already shows.")


def test_a_crashing_route_answers_a_json_500_with_the_request_id_and_logs_the_traceback(settings, json_log):
    app = create_app(settings, features=FEATURES)
    with TestClient(app, base_url=settings.base_url, raise_server_exceptions=False) as client:
        resp = client.get("/crash", headers={"x-request-id": "crash-1"})
    assert resp.status_code == 500
    assert resp.json() == {"error": "internal_error", "request_id": "crash-1"}
    assert "secret" not in resp.text
    logged = [e for e in json_log() if e.get("request_id") == "crash-1" and e["event"] == "http.unhandled_error"]
    assert len(logged) == 1 and "secret internals" in logged[0]["exception"]


def test_a_bad_token_on_a_path_other_than_mcp_is_not_checked(settings):
    with TestClient(create_app(settings, features=[]), base_url=settings.base_url) as client:
        missing = client.get("/nothing-here", headers={"authorization": "Bearer bogus"})
        mcp = client.post("/mcp", headers={"authorization": "Bearer bogus", "accept": "application/json"},
                          json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert missing.status_code == 404
    assert mcp.status_code == 401


def test_the_brand_is_one_setting_in_server_info_and_the_resource_metadata(database_url):
    from app.settings import SettingsError, load_settings

    settings = load_settings(database_url=database_url, server_name="acme-recipes", server_title="Acme Recipes",
                             _env_file=None)
    with TestClient(create_app(settings, features=[]), base_url=settings.base_url) as client:
        init = client.post("/mcp", headers={"accept": "application/json, text/event-stream"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})
        metadata = client.get("/.well-known/oauth-protected-resource")
    info = init.json()["result"]["serverInfo"]
    assert (info["name"], info["title"]) == ("acme-recipes", "Acme Recipes")
    assert metadata.json()["resource_name"] == "Acme Recipes"
    with pytest.raises(SettingsError) as refused:
        load_settings(server_name="Acme Recipes!", _env_file=None)
    assert len(refused.value.lines) == 1 and refused.value.lines[0].startswith("APP_SERVER_NAME")


def test_an_external_idps_key_set_is_fetched_from_the_port_its_url_names_and_no_other(db):
    from app.main import build_auth, build_deps, scope_catalog
    from app.settings import load_settings

    jwks = "https://idp.example:8443/realms/app/protocol/openid-connect/certs"
    settings = load_settings(auth_mode="external", oauth_issuer="https://idp.example:8443/realms/app",
                             oauth_jwks_url=jwks, _env_file=None)
    deps = build_deps(settings, db, [])
    verifier, _ = build_auth(settings, deps, scope_catalog([]), None, None, None, [])
    assert verifier.jwks.guard.refusal(jwks) is None  # the operator named that port
    assert deps.guard.refusal("https://files.example:8443/a.csv") is not None  # the other fetches keep 443/80
    assert verifier.jwks.guard.refusal("https://idp.example:8444/x") is not None
