"""Signing keys of the built-in authorization server.

Production: ``APP_OAUTH_SIGNING_KEYS`` holds a JWKS with private keys. The FIRST key signs;
every key is published at ``/jwks.json``. Rotation (docs/oauth.md): put the new key first
and keep the old one listed until the last token it signed has expired (the access-token
lifetime, at most 15 minutes), then remove it.

Development: a P-256 key is generated once under ``APP_VAR_DIR`` (mode 0600), so restarts and
workers agree. Production refuses to start on generated material
unless ``APP_ALLOW_GENERATED_KEYS=true``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joserfc.jwk import DictKey, ECKey, KeySet, RSAKey

from app.command import OperatorError
from app.secret import persisted

KEYS_FILE = "oauth-signing-keys.json"
# By curve; RSA keys sign RS256.
_EC_ALGORITHMS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}


class KeyMaterialError(OperatorError, ValueError):
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
            if isinstance(key, ECKey):
                alg = _EC_ALGORITHMS.get(key.curve_name)
                if alg is None:
                    raise KeyMaterialError(f"APP_OAUTH_SIGNING_KEYS: EC curve {key.curve_name} is "
                                           "not supported (use P-256, P-384 or P-521)")
            else:
                alg = "RS256"
            signing.append(SigningKey(kid=data.get("kid") or key.thumbprint(), alg=alg, key=key))
        if len({k.kid for k in signing}) != len(signing):
            raise KeyMaterialError("APP_OAUTH_SIGNING_KEYS: key ids (kid) must be unique")
        self.keys = signing
        self.generated = generated
        public: list[DictKey] = []
        for k in signing:
            data = k.key.as_dict(private=False)
            public.append({**data, "kid": k.kid, "alg": k.alg, "use": "sig"})
        self.public_jwks: dict[str, Any] = {"keys": public}
        self.verify_keys = KeySet.import_key_set({"keys": public})

    @property
    def current(self) -> SigningKey:
        return self.keys[0]

    @property
    def algorithms(self) -> list[str]:
        return sorted({k.alg for k in self.keys})


def generate_jwks() -> dict[str, Any]:
    key = ECKey.generate_key("P-256", private=True)
    return {"keys": [{**key.as_dict(private=True), "kid": key.thumbprint(), "alg": "ES256", "use": "sig"}]}


def load_keyring(signing_keys: str | None, var_dir: str) -> KeyRing:
    """The keys of APP_OAUTH_SIGNING_KEYS, else the development key generated under ``var_dir``."""
    if signing_keys:
        try:
            jwks = json.loads(signing_keys)
        except json.JSONDecodeError:
            raise KeyMaterialError("APP_OAUTH_SIGNING_KEYS: not JSON (expected a JSON Web Key Set)") from None
        return KeyRing(jwks)
    text = persisted(Path(var_dir) / KEYS_FILE, json.dumps(generate_jwks()))
    return KeyRing(json.loads(text), generated=True)
