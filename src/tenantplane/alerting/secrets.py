"""Encryption of backend credentials at rest (Fernet, under the secret key's derived key for
stored credentials; tenantplane.keys).

Each ciphertext is stored with the derivation that made it. ``legacy`` ciphertexts were made
before keys were derived through HKDF (an HMAC of the secret key with a purpose string);
they stay readable with any secret key of the ring until ``tenantplane keys rotate``
re-encrypts them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from tenantplane.keys import LEGACY, KeyRing, Purpose, RootKey

_LEGACY_PURPOSE = b"tenantplane alerting backend credentials v1"


def _fernet(key: bytes) -> Fernet:
    return Fernet(base64.urlsafe_b64encode(key))


def _legacy_fernet(root: RootKey) -> Fernet:
    return _fernet(hmac.new(root.secret, _LEGACY_PURPOSE, hashlib.sha256).digest())


def encrypt(keys: KeyRing, plaintext: str) -> tuple[bytes, str]:
    """The ciphertext under the current secret key, and its derivation (to store with it)."""
    current = keys.current
    ciphertext = _fernet(current.key(Purpose.stored_credentials)).encrypt(plaintext.encode())
    return ciphertext, current.derivation


def decrypt(keys: KeyRing, ciphertext: bytes, derivation: str) -> str:
    if derivation == LEGACY:
        candidates = [_legacy_fernet(root) for root in keys.all]
    else:
        root = keys.find(derivation)
        candidates = [] if root is None else [_fernet(root.key(Purpose.stored_credentials))]
    try:
        if not candidates:
            raise InvalidToken
        return MultiFernet(candidates).decrypt(ciphertext).decode()
    except InvalidToken as exc:
        raise ValueError(
            "credentials were encrypted with a secret key that is neither "
            "TENANTPLANE_SECRET_KEY nor in TENANTPLANE_SECRET_KEY_FALLBACKS"
        ) from exc
