"""Pure pieces of the files feature and its settings: names, refusal wording, configuration rules."""

from __future__ import annotations

import pytest

from app.features.files.analysis.compare import compare
from app.features.files.analysis.model import Analysis
from app.features.files.ingest import file_name_of, quota_refusal, refusal_message
from app.features.files.settings import FilesSettings
from app.features.files.tool import comparison_of_raw, files_in
from app.limits import Check, OverLimit, per_seconds
from app.net.refusals import OutboundRefused
from app.settings import SettingsError, load_part, load_settings

pytestmark = pytest.mark.demo("files")


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


@pytest.mark.parametrize(("kind", "reason", "cap", "says"), [
    ("size", "response larger than 1000000 bytes", 1_000_000, "larger than the 1 MB limit"),
    ("size", "response declared larger than 52428800 bytes", 50 * 1024 * 1024, "larger than the 50 MiB limit"),
    ("size", "response larger than 1500 bytes", 1500, "larger than the 1,500 bytes limit"),
    ("timeout", "total timeout exceeded", 1, "timed out"),
    ("address", "resolves to a non-public address", 1, "private or internal address"),
    ("address", "cloud metadata address", 1, "private or internal address"),
    ("url", "only https is allowed", 1, "Only public https URLs are accepted"),
    ("url", "scheme 'file' not allowed", 1, "Only public https URLs are accepted"),
    # The words "address" or "host" in a network error do not make it a policy refusal.
    ("network", "connection failed (OSError: Cannot assign requested address)", 1,
     "Could not fetch the file from files.example"),
    ("network", "host name does not resolve", 1, "Could not fetch the file from files.example"),
])
def test_each_refusal_is_worded_for_the_model_by_its_kind(kind, reason, cap, says):
    message = refusal_message(OutboundRefused("x", host="files.example", reason=reason, kind=kind), cap)
    assert says in message, message


def test_s3_storage_needs_a_bucket_and_a_known_encryption():
    with pytest.raises(SettingsError) as missing:
        load_settings(storage_backend="s3", _env_file=None)
    assert missing.value.lines == ["APP_STORAGE_BACKEND=s3 needs APP_S3_BUCKET"]
    with pytest.raises(SettingsError) as bad:
        load_settings(storage_backend="S3 ", s3_bucket="b", s3_sse="rot13", _env_file=None)
    assert bad.value.lines == ["APP_S3_SSE: must be one of none, AES256, aws:kms (got 'rot13')"]
    with pytest.raises(SettingsError) as kms:
        load_settings(storage_backend="s3", s3_bucket="b", s3_kms_key_id="arn:aws:kms:key", _env_file=None)
    assert kms.value.lines == ["APP_S3_KMS_KEY_ID needs APP_S3_SSE=aws:kms"]
    settings = load_settings(storage_backend="S3", s3_bucket="b", s3_prefix="/team/mcp/", s3_sse="aes256",
                             _env_file=None)
    assert (settings.storage_backend, settings.s3_prefix, settings.s3_sse) == ("s3", "team/mcp/", "AES256")


@pytest.mark.parametrize(("name", "value"), [("max_bytes", 10), ("anon_ttl", 5), ("url_ttl", 7200),
                                             ("fetch_timeout", 0)])
def test_file_limits_out_of_range_name_their_variable(name, value):
    with pytest.raises(SettingsError) as bad:
        load_part(FilesSettings, **{name: value}, _env_file=None)
    assert bad.value.lines == [f"APP_FILES_{name.upper()}: " + bad.value.lines[0].split(": ", 1)[1]]


def test_a_bad_files_setting_in_the_environment_stops_the_app_in_one_line(monkeypatch: pytest.MonkeyPatch):
    from app.main import create_app, discover_features

    monkeypatch.setenv("APP_FILES_ANON_TTL", "5")
    with pytest.raises(SettingsError) as bad:
        create_app(load_settings(_env_file=None), features=[f for f in discover_features() if f.name == "files"])
    assert bad.value.lines == ["APP_FILES_ANON_TTL: must be 60 or more (got '5')"]


def test_a_number_too_long_for_int_makes_its_column_text_not_the_analysis_fail(tmp_path):
    from app.features.files.analysis import analyze

    path = tmp_path / "ids.csv"
    path.write_text("id,serial\n1," + "7" * 5000 + "\n2,42\n3,43\n")
    result = analyze(path, file_name="ids.csv")
    columns = {c["name"]: c["type"] for c in result.details["columns"]}
    assert (result.details["rows"], columns) == (3, {"id": "integer", "serial": "string"})
    assert not any("stopped early" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize(("origin", "declared"), [
    ("https://files.example.com", ("https://files.example.com",)),
    ("http://127.0.0.1:8000", ("http://127.0.0.1:8000",)),
    # A LAN dev server or an http MinIO: not a redirect target ChatGPT takes; the server still starts.
    ("http://192.168.1.20:8000", ()),
    ("http://0.0.0.0:8000", ()),
])
def test_the_files_widget_declares_the_download_origin_only_when_chatgpt_could_open_it(origin, declared):
    from app.features.files.tool import files_widget

    assert files_widget(origin).redirect_domains == declared


@pytest.mark.parametrize(("arguments", "units"), [({"files": [{}, {}, {}]}, 3), ({"files": "not a list"}, 1),
                                                  ({}, 1)])
def test_compare_files_costs_a_unit_a_file_of_the_files_budget(arguments, units: int):
    assert files_in(arguments) == units


def over_quota(cost: int, amount: int = 3_000_000, retry_after: int = 1800) -> OverLimit:
    return OverLimit(Check("files.anonymous_bytes", per_seconds(amount, 3600), "k", "this caller", cost), retry_after)


def test_the_quota_refusal_says_when_to_retry_or_that_the_file_never_fits():
    used_up = quota_refusal(over_quota(900_000))
    assert (used_up.message, used_up.advice) == (
        "The file was not kept: anonymous uploads from this caller may add at most 3 MB every 1 hour, and that is "
        "used up. It can be retried in 30 min.",
        "Ask the user to connect (sign in to) this app: its library keeps files without this quota.")
    too_big = quota_refusal(over_quota(4_000_000))
    assert too_big.message == ("The file was not kept: it is 4 MB, and anonymous uploads from this caller may add "
                               "at most 3 MB every 1 hour.")
    assert too_big.advice == used_up.advice


@pytest.mark.parametrize("where", ["environment", ".env"])
def test_local_storage_set_only_by_the_old_variable_is_refused_with_the_new_one(tmp_path, monkeypatch, where):
    from app.features.files.settings import storage_dir_refusal

    monkeypatch.delenv("APP_STORAGE_DIR", raising=False)
    monkeypatch.delenv("APP_FILES_DIR", raising=False)
    old = tmp_path / "data" / "files"
    if where == "environment":
        monkeypatch.setenv("APP_FILES_DIR", str(old))
    else:
        (tmp_path / ".env").write_text(f"app_files_dir={old}\n")  # any case, as pydantic-settings reads it
        monkeypatch.chdir(tmp_path)
    core, files = load_settings(), load_part(FilesSettings)
    assert storage_dir_refusal(core, files) is None  # only a spool there: nothing would be lost
    (old / "objects" / "ab").mkdir(parents=True)  # what the local backend kept there before
    refusal = storage_dir_refusal(core, files)
    assert refusal is not None and refusal.lines == [
        "APP_STORAGE_DIR: the local storage folder is no longer APP_FILES_DIR (now the files feature's spool only): "
        f"set APP_STORAGE_DIR to the folder that holds objects/ (APP_FILES_DIR={str(old)!r} before)"]
    assert storage_dir_refusal(load_settings(storage_dir="/elsewhere"), files) is None  # both set: as told
    assert storage_dir_refusal(load_settings(storage_backend="s3", s3_bucket="b"), files) is None
    assert storage_dir_refusal(core, load_part(FilesSettings, dir="./var/files")) is None  # the same folder


@pytest.mark.parametrize(("kind", "linked_sees"), [("network", "bad HTTP exchange"), ("timeout", "timed out"),
                                                  ("address", "a private or internal address")])
def test_an_anonymous_caller_learns_one_sentence_of_a_failed_fetch_whatever_the_network_did(kind, linked_sees):
    told = {refusal_message(OutboundRefused("x", host="files.example", reason=reason, kind=kind), 1024,
                            anonymous=True)
            for reason in ("connection failed", "bad HTTP exchange", "connection refused", "resolves to a private")}
    assert told == {"The file could not be fetched from files.example: check that its link is a public https URL "
                    "that works."}
    linked = refusal_message(OutboundRefused("x", host="files.example", reason="bad HTTP exchange", kind=kind), 1024)
    assert linked_sees in linked  # a linked account is told what happened


def test_a_table_whose_analysis_stopped_early_is_compared_without_a_row_count():
    """A CSV whose analysis stopped at a value it could not read keeps only {bytes}: the
    comparison leaves its row count out instead of failing the whole call."""
    whole = Analysis("csv", "text/csv", "", {"bytes": 10, "rows": 3, "columns": [
        {"name": "a", "type": "integer"}]})
    stopped = Analysis("csv", "text/csv", "", {"bytes": 10})
    compared = comparison_of_raw(compare([("whole.csv", whole), ("stopped.csv", stopped)]))
    assert compared.rows == {"whole.csv": 3}
    assert compared.shared_columns == []
