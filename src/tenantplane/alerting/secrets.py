"""Encryption of backend credentials at rest (Fernet, key derived from the secret key)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken

_PURPOSE = b"tenantplane alerting backend credentials v1"


def _fernet(secret_key: bytes) -> Fernet:
    key = hmac.new(secret_key, _PURPOSE, hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt(secret_key: bytes, plaintext: str) -> bytes:
    return _fernet(secret_key).encrypt(plaintext.encode())


def decrypt(secret_key: bytes, ciphertext: bytes) -> str:
    try:
        return _fernet(secret_key).decrypt(ciphertext).decode()
    except InvalidToken as exc:
        raise ValueError("credentials were encrypted with another secret key") from exc
