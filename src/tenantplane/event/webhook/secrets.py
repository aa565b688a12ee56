"""Signing secrets: made, stored encrypted, and used to sign deliveries.

A secret is ``whsec_`` and the standard base64 of 32 random bytes, the Standard Webhooks
format (https://www.standardwebhooks.com): its libraries take it as it is. It is shown once,
when it is made (create, rotate-secret), and stored only encrypted (Fernet under the key
derived from TENANTPLANE_SECRET_KEY for stored credentials, tenantplane.keys), with the
derivation that made it.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import datetime

from cryptography.fernet import Fernet, InvalidToken
from standardwebhooks import Webhook as Signer

from tenantplane.keys import KeyRing, Purpose

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def _fernet(key: bytes) -> Fernet:
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt(keys: KeyRing, secret: str) -> tuple[bytes, str]:
    """The ciphertext under the current secret key, and its derivation (to store with it)."""
    current = keys.current
    return _fernet(current.key(Purpose.stored_credentials)).encrypt(secret.encode()), (
        current.derivation
    )


def decrypt(keys: KeyRing, ciphertext: bytes, derivation: str) -> str:
    root = keys.find(derivation)
    try:
        if root is None:
            raise InvalidToken
        return _fernet(root.key(Purpose.stored_credentials)).decrypt(ciphertext).decode()
    except InvalidToken as exc:
        raise ValueError(
            "a webhook secret was encrypted with a secret key that is neither "
            "TENANTPLANE_SECRET_KEY nor in TENANTPLANE_SECRET_KEY_FALLBACKS"
        ) from exc


def signature_header(
    signing: Sequence[str], message_id: str, timestamp: datetime, payload: str
) -> str:
    """``webhook-signature``: one ``v1,<base64>`` per secret, space-separated (during a
    rotation's overlap the new secret's first, then the old one's)."""
    return " ".join(Signer(secret).sign(message_id, timestamp, payload) for secret in signing)
