"""Signing keys of the built-in authorization server, and the other generated secrets.

Production: ``APP_OAUTH_SIGNING_KEYS`` holds a JWKS with private keys. The FIRST key signs;
every key is published at ``/jwks.json``. Rotation (docs/oauth.md): put the new key first
and keep the old one listed until the last token it signed has expired (the access-token
lifetime, at most 15 minutes), then remove it.

Development: a P-256 key and a form secret are generated once under ``APP_VAR_DIR`` (mode
0600), so restarts and workers agree. Production refuses to start on generated material
unless ``APP_ALLOW_GENERATED_KEYS=true``.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joserfc.jwk import ECKey, KeySet, RSAKey

from app.settings import Settings

KEYS_FILE = "oauth-signing-keys.json"
SECRET_FILE = "secret-key"
_ALGORITHMS = {"EC": {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}, "RSA": "RS256"}


class KeyMaterialError(ValueError):
    """Unusable key material; the message names the setting."""


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    key: ECKey | RSAKey


class KeyRing:
    def __init__(self, jwks: dict[str, Any], *, generated: bool = False) -> None:
        keys = jwks.get("keys") if isinstance(jwks, dict) else None
        if not keys or not isinstance(keys, list):
            raise KeyMaterialError("APP_OAUTH_SIGNING_KEYS: a JSON Web Key Set with at least one private key")
        signing: list[SigningKey] = []
        for data in keys:
            try:
                key = KeySet.import_key_set({"keys": [data]}).keys[0]
            except Exception as exc:  # joserfc raises several types for malformed keys
                raise KeyMaterialError(f"APP_OAUTH_SIGNING_KEYS: unreadable key ({exc})") from None
            if not isinstance(key, ECKey | RSAKey) or not key.is_private:
                raise KeyMaterialError("APP_OAUTH_SIGNING_KEYS: every key must be a private EC or RSA key")
            alg = _ALGORITHMS[key.key_type]
            alg = alg.get(key.curve_name) if isinstance(alg, dict) else alg
            if alg is None:
                raise KeyMaterialError(f"APP_OAUTH_SIGNING_KEYS: EC curve {key.curve_name} is not supported "
                                       "(use P-256, P-384 or P-521)")
            signing.append(SigningKey(kid=data.get("kid") or key.thumbprint(), alg=alg, key=key))
        if len({k.kid for k in signing}) != len(signing):
            raise KeyMaterialError("APP_OAUTH_SIGNING_KEYS: key ids (kid) must be unique")
        self.keys = signing
        self.generated = generated
        public = []
        for k in signing:
            data = k.key.as_dict(private=False)
            public.append({**data, "kid": k.kid, "alg": k.alg, "use": "sig"})
        self.public_jwks: dict[str, Any] = {"keys": public}
        self.verify_keys = KeySet.import_key_set(self.public_jwks)

    @property
    def current(self) -> SigningKey:
        return self.keys[0]

    @property
    def algorithms(self) -> list[str]:
        return sorted({k.alg for k in self.keys})


def generate_jwks() -> dict[str, Any]:
    key = ECKey.generate_key("P-256", private=True)
    return {"keys": [{**key.as_dict(private=True), "kid": key.thumbprint(), "alg": "ES256", "use": "sig"}]}


def _persisted(path: Path, make: str) -> str:
    """The file's content, creating it with ``make`` (mode 0600) if absent; concurrent starts agree."""
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


def load_keyring(settings: Settings) -> KeyRing:
    if settings.oauth_signing_keys:
        try:
            jwks = json.loads(settings.oauth_signing_keys)
        except json.JSONDecodeError:
            raise KeyMaterialError("APP_OAUTH_SIGNING_KEYS: not JSON (expected a JSON Web Key Set)") from None
        return KeyRing(jwks)
    text = _persisted(Path(settings.var_dir) / KEYS_FILE, json.dumps(generate_jwks()))
    return KeyRing(json.loads(text), generated=True)


def load_secret(settings: Settings) -> tuple[bytes, bool]:
    """The form-signing secret and whether it was generated here."""
    if settings.secret_key:
        return settings.secret_key.encode(), False
    return _persisted(Path(settings.var_dir) / SECRET_FILE, secrets.token_urlsafe(48)).encode(), True
