"""The chosen level holds for the libraries that set their own (one-shot commands print only errors)."""

from __future__ import annotations

import io
import json
import logging
import warnings

import psycopg  # noqa: F401  (its import sets its logger to WARNING)
import structlog

from app.logging import configure_logging


def test_a_library_that_sets_its_own_level_still_follows_the_chosen_one():
    try:
        configure_logging("json", "error")
        assert logging.getLogger("psycopg").getEffectiveLevel() == logging.ERROR
        configure_logging("json", "info")
        assert logging.getLogger("psycopg").getEffectiveLevel() == logging.WARNING
    finally:
        configure_logging("console", "info", sync=True)


JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"
REFRESH = "rt_" + "Q6T3FNZSZk4zk7nFuKjvpxEu0123456789"


def _logged(level: str, emit) -> list[dict]:
    stream = io.StringIO()
    try:
        configure_logging("json", level, stream=stream, sync=True)
        emit()
    finally:
        configure_logging("console", "info", sync=True)
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_at_debug_level_the_libraries_that_print_credentials_stay_at_info():
    def emit() -> None:
        logging.getLogger("authlib.oauth2.rfc6749.grants.authorization_code").debug(
            "Issue token %r to %r", {"access_token": "x" * 40}, "client")
        logging.getLogger("httpcore.http11").debug("receive_response_headers.complete")
        logging.getLogger("app.probe").debug("our own debug line")

    assert [e["event"] for e in _logged("debug", emit)] == ["our own debug line"]


def test_credentials_inside_message_text_are_redacted_whoever_logs_them():
    def emit() -> None:
        logging.getLogger("authlib.oauth2.rfc6749.grants.refresh_token").warning(
            "Issue token %r", {"access_token": JWT, "refresh_token": REFRESH, "expires_in": 3600})
        structlog.get_logger("app.probe").info(f"callback ?code=AbCdEfGhIjKlMnOp&state=s1 with Bearer {JWT}")
        try:
            raise ValueError(f"bad client_secret='cs_{'k' * 30}' and password: hunter2hunter2")
        except ValueError:
            logging.getLogger("app.probe").exception("failed")
        # What is not a credential stays as it was.
        structlog.get_logger("app.probe").info("status code=400, error_code: invalid_request, basic authentication")

    lines = _logged("info", emit)
    assert lines[0]["event"] == ("Issue token {'access_token': '[redacted]', 'refresh_token': '[redacted]', "
                                 "'expires_in': 3600}")
    assert lines[1]["event"] == "callback ?code=[redacted]&state=s1 with [redacted]"
    assert "cs_k" not in lines[2]["exception"] and "hunter2" not in lines[2]["exception"]
    assert "client_secret='[redacted]'" in lines[2]["exception"] and "password: [redacted]" in lines[2]["exception"]
    assert lines[3]["event"] == "status code=400, error_code: invalid_request, basic authentication"


def test_signed_links_encoded_forms_nested_values_and_a_chosen_request_id_are_redacted_too():
    def emit() -> None:
        structlog.get_logger("app.probe").info(
            "links", url="https://files.example/f/1?sig=AbCdEf0123456789&exp=1",
            s3="https://b.s3/x?X-Amz-Signature=abcdef0123456789&X-Amz-Security-Token=FwoGZXIvYXdzEJr",
            form=f"grant_type=refresh_token&refresh_token%3D{REFRESH}",
            data={"note": "ac_" + "a" * 30, "password": "short", "deeper": [{"auth": f"Bearer {REFRESH}x1"}],
                  "userLocation": {"city": "Paris"}, "Secret": "hunter2hunter2", "code": 400},
            request_id=REFRESH)

    [line] = _logged("info", emit)
    assert line["url"] == "https://files.example/f/1?sig=[redacted]&exp=1"
    assert line["s3"] == "https://b.s3/x?X-Amz-Signature=[redacted]&X-Amz-Security-Token=[redacted]"
    assert line["form"] == "grant_type=refresh_token&refresh_token%3D[redacted]"
    assert line["data"] == {"note": "[redacted]", "password": "[redacted]", "deeper": [{"auth": "[redacted]"}],
                            "userLocation": "[redacted]", "Secret": "[redacted]", "code": 400}
    assert line["request_id"] == "[redacted]"


def test_a_sentence_of_the_servers_own_is_scrubbed_like_any_text():
    """app.wording's sentences are a str subclass: a caller's words inside one (a key's path, a
    network error) are scanned, as a plain str is, at the top of a line and nested."""
    from app.wording import Wording  # noqa: PLC0415

    say = Wording(__file__)

    def emit() -> None:
        structlog.get_logger("app.probe").info(
            "said", argument=say("a key of {where}", where="api_key=sk-live-abcdef1234567890"),
            data={"reason": say("connection failed ({error})", error=f"Bearer {JWT}")})

    [line] = _logged("info", emit)
    assert line["argument"] == "a key of api_key=[redacted]"
    assert line["data"] == {"reason": "connection failed ([redacted])"}


def test_a_python_warning_is_a_log_line_of_its_own_through_the_same_redaction():
    def emit() -> None:
        warnings.warn(f"weak key for client_secret={'k' * 20}", UserWarning, stacklevel=1)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        logging.captureWarnings(False)  # pytest's recorder took the hook's place: configure_logging installs it anew
        [line] = _logged("info", emit)
        [quiet] = _logged("error", emit)  # the one-shot commands log errors only, and warnings still
    assert line["logger"] == "py.warnings" and line["level"] == "warning" and quiet["event"] == line["event"]
    assert "client_secret=[redacted]" in line["event"] and "k" * 20 not in line["event"]
