"""What the installed parts say they keep, on the privacy page, from their own settings: the
files demo's lifetime of anonymous files, the recipes demo's saved list, the authorization
server's accounts, providers and token lifetimes."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest
from starlette.testclient import TestClient

from app.authserver.settings import AuthServerSettings
from app.features.files.settings import FilesSettings
from app.main import create_app
from app.settings import load_part

pytestmark = [pytest.mark.demo("files", "recipes"), pytest.mark.authserver,
              pytest.mark.any_database]


def _privacy(settings, tmp_path, *parts, lang: str = "en") -> str:
    app = create_app(settings.model_copy(update={"var_dir": str(tmp_path)}), parts=parts)
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        html = http.get(f"/privacy?lang={lang}").text
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.split("</style>")[-1])))


@pytest.mark.parametrize(("ttl", "said"), [(3600, "deleted 1 hour after you share them"),
                                           (5400, "deleted 90 minutes after you share them"),
                                           (2 * 86400, "deleted 2 days after you share them")])
def test_the_privacy_page_says_how_long_anonymous_files_are_kept_as_configured(
        settings, tmp_path, ttl, said):
    text = _privacy(settings, tmp_path, load_part(FilesSettings, _env_file=None, anon_ttl=ttl))
    assert said in text
    assert text.count("after you share them") == 1


def test_each_part_says_what_it_keeps_in_the_language_of_the_page(settings, tmp_path):
    own = load_part(AuthServerSettings, _env_file=None, oauth_access_token_ttl=900,
                    oauth_refresh_token_ttl=7 * 86400, oidc_providers=json.dumps([
                        {"id": "corp", "name": "Corp SSO", "issuer": "https://login.corp.example",
                         "client_id": "c", "client_secret": "s"}]))
    text = _privacy(settings, tmp_path, own, lang="pt")
    assert "As receitas que você salva ficam guardadas com a sua conta" in text
    assert "Login com Corp SSO: o identificador que o provedor lhe dá" in text
    assert "o acesso dura 15 minutos de cada vez" in text
    assert "o vínculo termina sozinho se o ChatGPT não o usar por 7 dias" in text
    assert "Um registro de cada app que você vincula" in text
    assert "Em http://127.0.0.1:8000/account você vê os apps vinculados" in text
    without = _privacy(settings, tmp_path / "x", load_part(AuthServerSettings, _env_file=None))
    assert "Signing in with" not in without and "access lasts 10 minutes at a time" in without
    assert "the link ends by itself if ChatGPT does not use it for 30 days" in without
