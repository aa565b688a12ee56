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

from tenantplane.keys import LEGACY, KeyRing, RootKey, UnknownKey, decrypt_stored, encrypt_stored

_LEGACY_PURPOSE = b"tenantplane alerting backend credentials v1"


def _legacy_fernet(root: RootKey) -> Fernet:
    key = hmac.new(root.secret, _LEGACY_PURPOSE, hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt(keys: KeyRing, plaintext: str) -> tuple[bytes, str]:
    """The ciphertext under the current secret key, and its derivation (to store with it)."""
    return encrypt_stored(keys, plaintext)


def decrypt(keys: KeyRing, ciphertext: bytes, derivation: str) -> str:
    if derivation != LEGACY:
        return decrypt_stored(keys, ciphertext, derivation)
    try:
        return MultiFernet([_legacy_fernet(root) for root in keys.all]).decrypt(ciphertext).decode()
    except InvalidToken as exc:
        raise UnknownKey from exc
