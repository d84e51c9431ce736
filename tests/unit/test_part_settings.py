"""A part's settings (a feature's, the authorization server's): declared beside it, reported like the core's,
with secrets never repeated."""

from __future__ import annotations

import pytest
from pydantic_settings import SettingsConfigDict

from app.settings import SettingsError, SettingsPart, load_part


class NotesSettings(SettingsPart):
    model_config = SettingsConfigDict(env_prefix="APP_NOTES_")

    max_notes: int = 10
    api_token: str = "t" * 32


def test_a_part_setting_is_read_under_its_prefix(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("APP_NOTES_MAX_NOTES", "3")
    assert load_part(NotesSettings, _env_file=None).max_notes == 3


def test_a_bad_value_is_one_line_naming_the_variable_and_a_secret_by_its_name_is_never_repeated(
        monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("APP_NOTES_MAX_NOTES", "many")
    with pytest.raises(SettingsError) as bad:
        load_part(NotesSettings, api_token=123456, _env_file=None)
    assert bad.value.lines == ["APP_NOTES_MAX_NOTES: must be a whole number (got 'many')",
                               # api_token says token: its value stays out of the line
                               "APP_NOTES_API_TOKEN: must be text"]


def test_an_override_that_names_no_setting_of_the_part_is_an_error_of_the_code():
    with pytest.raises(TypeError, match="NotesSettings has no setting max_note"):
        load_part(NotesSettings, max_note=3, _env_file=None)
