"""Raw API keys and their keyed hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string

from tenantplane.keys import LEGACY, KeyRing, Purpose

KEY_PREFIX = "svc_"
ID_PREFIX = "ak-"
_BASE62 = string.digits + string.ascii_letters
_KEY_BYTES = 32  # 256 bits of randomness
_KEY_DIGITS = 43  # ceil(256 / log2(62)): every 256-bit value fits
_ID_DIGITS = 20
# is_key_id's rule as a regular expression, for the OpenAPI document.
KEY_ID_PATTERN = f"^{ID_PREFIX}[0-9A-Za-z]{{{_ID_DIGITS}}}$"


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, remainder = divmod(number, 62)
        digits.append(_BASE62[remainder])
    return "".join(reversed(digits))


def new_raw_key() -> str:
    return KEY_PREFIX + _base62(int.from_bytes(secrets.token_bytes(_KEY_BYTES), "big"), _KEY_DIGITS)


def new_key_id() -> str:
    return ID_PREFIX + "".join(secrets.choice(_BASE62) for _ in range(_ID_DIGITS))


def _is_base62(text: str) -> bool:
    # ASCII letters and digits are exactly the base-62 alphabet (checked in C, not per
    # character in Python: every authenticated request asks).
    return text.isascii() and text.isalnum()


def looks_like_key(token: str) -> bool:
    body = token.removeprefix(KEY_PREFIX)
    return token.startswith(KEY_PREFIX) and len(body) == _KEY_DIGITS and _is_base62(body)


def is_key_id(value: str) -> bool:
    body = value.removeprefix(ID_PREFIX)
    return value.startswith(ID_PREFIX) and len(body) == _ID_DIGITS and _is_base62(body)


def _hmac(key: bytes, raw_key: str) -> bytes:
    # The one-shot form: the same digest without an HMAC object per request.
    return hmac.digest(key, raw_key.encode(), hashlib.sha256)


def hash_key(keys: KeyRing, raw_key: str) -> tuple[bytes, str]:
    """The keyed hash of a raw key under the current secret key, and its derivation."""
    current = keys.current
    return _hmac(current.key(Purpose.api_key_hash), raw_key), current.derivation


def candidate_hashes(keys: KeyRing, raw_key: str) -> dict[bytes, str]:
    """Every hash the raw key may be stored under, with the derivation that makes it: the
    derived key of each secret key of the ring, and (for keys made before derivation) the
    secret key itself. All are looked up in one query, so that a key made under any of them
    costs one lookup, and so does a key that matches none."""
    candidates: dict[bytes, str] = {}
    for root in keys.all:
        candidates[_hmac(root.key(Purpose.api_key_hash), raw_key)] = root.derivation
        candidates[_hmac(root.secret, raw_key)] = LEGACY
    return candidates
