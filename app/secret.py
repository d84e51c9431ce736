"""The server's secret key, and the files generated secrets are kept in.

``APP_SECRET_KEY`` signs what the server hands out and must recognise later: the local storage's
download links, and the built-in authorization server's sign-in forms (each derives its own key from
it). Development without it: one is generated once under ``APP_VAR_DIR`` (mode 0600), so restarts and
workers agree. Production refuses to start on generated material unless ``APP_ALLOW_GENERATED_KEYS=true``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from app.command import OperatorError
from app.settings import Settings

SECRET_FILE = "secret-key"
# Why production refuses generated material (the end of each such refusal line).
GENERATED = ("a generated one would differ per replica and be lost with the disk; set it, or "
             "APP_ALLOW_GENERATED_KEYS=true")


class VarDirUnusable(OperatorError):
    """APP_VAR_DIR cannot hold the generated secrets (read-only, missing, not a folder)."""


def persisted(path: Path, make: str) -> str:
    """The file's content, creating it with ``make`` (mode 0600) if absent; concurrent starts agree."""
    try:
        return _persisted(path, make)
    except OSError as exc:
        raise VarDirUnusable(f"APP_VAR_DIR: cannot keep {path.name} in {str(path.parent)!r} "
                             f"({exc.strerror or exc}): make it a writable folder, or set what it would hold "
                             "(APP_SECRET_KEY, APP_OAUTH_SIGNING_KEYS)") from None


def _persisted(path: Path, make: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        return path.read_text()
    # Written whole under a private name, then linked into place: a concurrent starter either wins the
    # link or reads the winner's complete file, never a half-written one.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(make)
    try:
        os.link(temporary, path)
    except FileExistsError:
        return path.read_text()
    finally:
        temporary.unlink()
    return make


def load_secret(settings: Settings) -> tuple[bytes, bool]:
    """The secret key and whether it was generated here."""
    if settings.secret_key:
        return settings.secret_key.encode(), False
    return persisted(Path(settings.var_dir) / SECRET_FILE, secrets.token_urlsafe(48)).encode(), True


def request_state_keys(settings: Settings) -> list[bytes]:
    """The keys that seal a multi-round-trip request's state (APP_REQUEST_STATE_KEYS), the first one
    sealing. Unset (development): one derived from the secret key, which every worker and restart
    shares; its own derivation, so that it can never double as a link or form key."""
    if settings.request_state_keys:
        return [key.encode() for key in settings.request_state_keys]
    secret, _ = load_secret(settings)
    return [hashlib.sha256(b"request state\0" + secret).digest()]
