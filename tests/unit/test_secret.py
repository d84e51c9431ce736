"""The server's secret key: configured, or generated once under APP_VAR_DIR (core: download links need it too)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.secret import SECRET_FILE, load_secret
from app.settings import load_settings


@pytest.fixture
def dev_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("APP_SECRET_KEY", "APP_VAR_DIR"):
        monkeypatch.delenv(name, raising=False)
    return load_settings(var_dir=str(tmp_path / "var"), _env_file=None)


def test_generated_secret_is_written_once_private_and_reused(dev_settings):
    first, generated = load_secret(dev_settings)
    path = Path(dev_settings.var_dir) / SECRET_FILE
    assert generated is True
    assert len(first) >= 32
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_secret(dev_settings) == (first, True)
    assert path.read_bytes() == first


def test_a_configured_secret_is_used_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("APP_SECRET_KEY", raising=False)
    settings = load_settings(var_dir=str(tmp_path / "var"), secret_key="s" * 40, _env_file=None)
    assert load_secret(settings) == (b"s" * 40, False)
    assert not (tmp_path / "var").exists()
