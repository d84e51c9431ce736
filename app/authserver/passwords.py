"""Password hashing with scrypt (RFC 7914), a memory-hard KDF from the standard library.

Stored form: ``scrypt$LOG2N$R$P$SALT$HASH`` (salt and hash in base64), so the cost can be raised
later and old hashes still verify. Hashing takes tens of milliseconds on purpose: call
it off the event loop.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

LOG2_N, R, P = 15, 8, 1  # 32 MiB, ~60 ms here: OWASP's scrypt minimum is N=2^17 r=8 p=1 or an equivalent
_MAXMEM = 128 * 1024 * 1024


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**LOG2_N, r=R, p=P, maxmem=_MAXMEM, dklen=32)
    return f"scrypt${LOG2_N}${R}${P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        kind, log2_n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt), n=2 ** int(log2_n), r=int(r),
                                p=int(p), maxmem=_MAXMEM, dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# Verified against when the username does not exist, so a wrong username costs as long as a wrong password.
DUMMY_HASH = f"scrypt${LOG2_N}${R}${P}${_b64(b'0' * 16)}${_b64(b'0' * 32)}"
