"""Pure pieces of the files feature and its settings: names, refusal wording, configuration rules."""

from __future__ import annotations

import pytest

from app.features.files.ingest import file_name_of, refusal_message
from app.net.guard import OutboundRefused
from app.settings import SettingsError, load_settings


@pytest.mark.parametrize(("given", "url", "expected"), [
    ("report.csv", "https://files.example/x/y", "report.csv"),
    (None, "https://files.example/download/Q1%20sales.csv?sig=abc", "Q1 sales.csv"),
    ("  ", "https://files.example/a/b.pdf", "b.pdf"),
    ('evil"/..\\name\r\n.txt', "https://files.example/", "evil..name.txt"),
    (None, "https://files.example/", "file"),
    ("x" * 400, "https://files.example/", "x" * 255),
])
def test_the_file_name_is_printable_and_safe_for_a_download_header(given, url, expected):
    assert file_name_of(given, url) == expected


@pytest.mark.parametrize(("reason", "says"), [
    ("response larger than 1000000 bytes", "larger than the 1 MB limit"),
    ("response declared larger than 1000000 bytes", "larger than the 1 MB limit"),
    ("total timeout exceeded", "timed out"),
    ("read timed out", "timed out"),
    ("resolves to a non-public address", "private or internal address"),
    ("cloud metadata address", "private or internal address"),
    ("only https is allowed", "Only public https URLs are accepted"),
    ("scheme 'file' not allowed", "Only public https URLs are accepted"),
    ("connection failed (ConnectError: refused)", "Could not fetch the file from files.example"),
])
def test_each_refusal_is_worded_for_the_model(reason, says):
    message = refusal_message(OutboundRefused("x", host="files.example", reason=reason), 1_000_000)
    assert says in message, message


def test_s3_storage_needs_a_bucket_and_a_known_encryption():
    with pytest.raises(SettingsError) as missing:
        load_settings(storage_backend="s3", _env_file=None)
    assert missing.value.lines == ["APP_STORAGE_BACKEND=s3 needs APP_S3_BUCKET"]
    with pytest.raises(SettingsError) as bad:
        load_settings(storage_backend="S3 ", s3_bucket="b", s3_sse="rot13", _env_file=None)
    assert bad.value.lines == ["APP_S3_SSE: must be one of none, AES256, aws:kms (got 'rot13')"]
    settings = load_settings(storage_backend="S3", s3_bucket="b", s3_prefix="/team/mcp/", _env_file=None)
    assert (settings.storage_backend, settings.s3_prefix) == ("s3", "team/mcp/")


@pytest.mark.parametrize(("name", "value"), [("files_max_bytes", 10), ("files_anon_ttl", 5), ("files_url_ttl", 7200),
                                             ("files_fetch_timeout", 0)])
def test_file_limits_out_of_range_name_their_variable(name, value):
    with pytest.raises(SettingsError) as bad:
        load_settings(**{name: value}, _env_file=None)
    assert bad.value.lines[0].startswith(f"APP_{name.upper()}: ")
