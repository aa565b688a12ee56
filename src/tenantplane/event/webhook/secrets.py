"""Signing secrets: made, stored encrypted, and used to sign deliveries.

A secret is ``whsec_`` and the standard base64 of 32 random bytes, the Standard Webhooks
format (https://www.standardwebhooks.com): its libraries take it as it is. It is shown once,
when it is made (create, rotate-secret), and stored only encrypted (``encrypt_stored`` of
tenantplane.keys), with the derivation that made it; ``tenantplane keys rotate``
re-encrypts it under the current secret key.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import datetime

from standardwebhooks import Webhook as Signer

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def signature_header(
    signing: Sequence[str], message_id: str, timestamp: datetime, payload: str
) -> str:
    """``webhook-signature``: one ``v1,<base64>`` per secret, space-separated (during a
    rotation's overlap the new secret's first, then the old one's)."""
    return " ".join(Signer(secret).sign(message_id, timestamp, payload) for secret in signing)
