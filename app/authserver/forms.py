"""What the authorization server's endpoints read and answer with: capped bodies, forms and JSON with no NUL,
OAuth error documents, and the HMAC-signed values its pages hand the browser."""


import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.text import unstorable, unstorable_character

MAX_FORM_BYTES = 64 * 1024
NO_STORE = {"cache-control": "no-store", "pragma": "no-cache"}
CORS = {"access-control-allow-origin": "*", "access-control-allow-headers": "authorization, content-type",
        "access-control-allow-methods": "GET, POST, OPTIONS"}


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"The request body exceeds {limit} bytes.")
        self.limit = limit


async def read_body(request: Request, limit: int = MAX_FORM_BYTES) -> bytes:
    """The whole body, refused past ``limit`` whether declared or chunked (nothing else has read it yet)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise BodyTooLarge(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
    return b"".join(chunks)


class MalformedRequest(ValueError):
    pass


def parse_form(body: bytes | str) -> list[tuple[str, str]]:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        pairs = parse_qsl(text, keep_blank_values=True, max_num_fields=100)
    except ValueError:
        raise MalformedRequest("Too many parameters.") from None
    return no_nul(pairs)


def storable(value: str) -> bool:
    """Whether a database can hold ``value`` as text (``app.text``)."""
    return unstorable_character(value) is None


def basic_credentials_ok(headers: Any) -> bool:
    """Whether an HTTP Basic ``Authorization`` header, if there is one, is base64 of UTF-8 ``id:secret`` whose
    parts (%-decoded, as authlib reads them) a database can look up: authlib would fail on anything else with an
    exception, not an OAuth error."""
    auth = headers.get("authorization") or ""
    if " " not in auth:  # read as authlib reads it: no space, no credentials; then any whitespace splits
        return True
    scheme, token = auth.split(None, 1)
    if scheme.lower() != "basic":
        return True
    try:
        raw = base64.b64decode(token)
    except ValueError:  # binascii.Error: authlib takes it for no credentials at all
        return True
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(storable(unquote(part)) for part in text.split(":", 1))


def no_nul(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # A NUL is never part of a valid parameter, and PostgreSQL refuses it in text: stop it at the door.
    if any("\x00" in key or "\x00" in value for key, value in pairs):
        raise MalformedRequest("A parameter contains a NUL character.")
    return pairs


def json_document(body: bytes | str) -> Any:
    """``json.loads`` without NaN and Infinity, which are not JSON: raises ValueError for them too."""
    return json.loads(body, parse_constant=_no_constant)


def parse_json(body: bytes) -> Any:
    try:
        data = json_document(body)
    except (ValueError, UnicodeError, RecursionError):
        raise MalformedRequest("The body must be JSON (no NaN or Infinity).") from None
    # An escape, or a surrogate's bytes (json.loads reads bytes with surrogatepass).
    if (found := unstorable(data, whole="document")) is not None:
        raise MalformedRequest(f"In the body, {found[0]} contains {found[1]}.")
    return data


def _no_constant(name: str) -> Any:
    # NaN and Infinity are not JSON (RFC 8259), though Python reads them: nothing could write them back out.
    raise ValueError(name)


def oauth_error(error: str, description: str, status: int = 400, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse({"error": error, "error_description": description}, status_code=status,
                        headers={**NO_STORE, **CORS, **(headers or {})})


@dataclass
class Signer:
    """HMAC-signed, expiring values for the browser: CSRF tokens and the login ticket between the two pages."""

    secret: bytes

    def _mac(self, data: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.new(self.secret, data, hashlib.sha256).digest()).decode().rstrip("=")

    def sign(self, payload: dict[str, Any]) -> str:
        data = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
        return f"{data}.{self._mac(data.encode())}"

    def unsign(self, value: str) -> dict[str, Any] | None:
        data, _, mac = value.partition(".")
        if not mac or not hmac.compare_digest(mac.encode(), self._mac(data.encode()).encode()):
            return None
        try:
            payload = json.loads(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))
        except ValueError:
            return None
        if not isinstance(payload, dict) or payload.get("exp", 0) < time.time():
            return None
        return payload

    def csrf_token(self, cookie: str) -> str:
        return self._mac(b"csrf|" + cookie.encode())
