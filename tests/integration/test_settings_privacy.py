"""The privacy page says settings are kept only where some feature keeps one: a section of
buttons only (the files feature's) keeps nothing about a person."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from app.main import create_app, discover_features
from app.settings import Settings

pytestmark = [pytest.mark.demo("files", "zoo"), pytest.mark.any_database]
SAID = "The settings you choose for this app are kept with your account"


def _privacy(settings: Settings, tmp_path, names: set[str]) -> str:
    features = [f for f in discover_features() if f.name in names]
    app = create_app(settings.model_copy(update={"var_dir": str(tmp_path)}), features=features)
    with TestClient(app, base_url="http://127.0.0.1:8000") as http:
        return " ".join(http.get("/privacy").text.split())


def test_settings_are_said_where_a_feature_keeps_one_and_not_for_buttons_only(settings,
                                                                           tmp_path):
    assert SAID in _privacy(settings, tmp_path / "a", {"account", "files", "zoo"})
    assert SAID not in _privacy(settings, tmp_path / "b", {"account", "files"})
