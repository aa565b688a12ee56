"""One secret, one purpose: the keys derived from TENANTPLANE_SECRET_KEY.

Each use of the secret key gets its own key, derived with HKDF-SHA256 under a label of its
own (``Purpose``), so that no two mechanisms ever share key material: the keyed hash of API
keys, the encryption of stored credentials, that of responses kept for Idempotency-Key
replays, the signature of cluster access tokens, each cluster's credential towards the
token webhook, and that of lists' continue tokens. Rows that depend on a key record which
derivation made them (``key_derivation``): ``hkdf-sha256:<id>``, where the id names the
secret key it came from (a fingerprint, derived under a label of its own too), or ``legacy``
for rows made before keys were derived (the secret key itself keyed the API-key hash).

Rotation (docs/security.md): the new secret key becomes TENANTPLANE_SECRET_KEY and the old
one is listed in TENANTPLANE_SECRET_KEY_FALLBACKS; rows made under any key of the ring stay
readable, API-key hashes are re-made with the current key when their key is next used, and
``tenantplane keys rotate`` re-encrypts stored credentials at once.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import json
from collections.abc import Iterable
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

LEGACY = "legacy"
DERIVATION_PREFIX = "hkdf-sha256:"
_KEY_ID_LABEL = b"tenantplane/v1/key-id"


class Purpose(enum.Enum):
    """The HKDF info label of each use of the secret key."""

    api_key_hash = b"tenantplane/v1/api-key-hash"
    stored_credentials = b"tenantplane/v1/stored-credentials"
    idempotent_responses = b"tenantplane/v1/idempotent-responses"
    cluster_tokens = b"tenantplane/v1/cluster-tokens"
    token_webhook = b"tenantplane/v1/token-webhook"
    list_continue = b"tenantplane/v1/list-continue"
    console_csrf = b"tenantplane/v1/console-csrf"


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


class RootKey:
    """One secret key and the keys derived from it (computed once)."""

    def __init__(self, secret: bytes) -> None:
        if not secret:
            raise ValueError("a secret key cannot be empty")
        self.secret = secret
        self.derivation = DERIVATION_PREFIX + _hkdf(secret, _KEY_ID_LABEL)[:6].hex()
        self._derived = {purpose: _hkdf(secret, purpose.value) for purpose in Purpose}

    def key(self, purpose: Purpose) -> bytes:
        return self._derived[purpose]


class KeyRing:
    """The current secret key, which makes every new hash and ciphertext, and the fallbacks,
    which only read what earlier keys made."""

    def __init__(self, current: bytes, fallbacks: Iterable[bytes] = ()) -> None:
        self.current = RootKey(current)
        self.fallbacks = tuple(RootKey(secret) for secret in fallbacks if secret != current)

    @property
    def all(self) -> tuple[RootKey, ...]:
        return (self.current, *self.fallbacks)

    def find(self, derivation: str) -> RootKey | None:
        """The key a row's ``key_derivation`` names, if it is in the ring."""
        return next((root for root in self.all if root.derivation == derivation), None)


def _fernet(key: bytes) -> Fernet:
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt_stored(keys: KeyRing, plaintext: str) -> tuple[bytes, str]:
    """A secret to store (a backend's credential, a webhook's signing secret): Fernet under
    the current secret key's stored-credentials key. The ciphertext, and its derivation (to
    store with it)."""
    current = keys.current
    return _fernet(current.key(Purpose.stored_credentials)).encrypt(plaintext.encode()), (
        current.derivation
    )


class UnknownKey(ValueError):
    def __init__(self) -> None:
        super().__init__(
            "a stored secret was encrypted with a secret key that is neither "
            "TENANTPLANE_SECRET_KEY nor in TENANTPLANE_SECRET_KEY_FALLBACKS"
        )


def decrypt_stored(keys: KeyRing, ciphertext: bytes, derivation: str) -> str:
    """What ``encrypt_stored`` encrypted under the key ``derivation`` names (any key of the
    ring); UnknownKey when none of them made it."""
    root = keys.find(derivation)
    if root is None:
        raise UnknownKey
    try:
        return _fernet(root.key(Purpose.stored_credentials)).decrypt(ciphertext).decode()
    except InvalidToken as exc:
        raise UnknownKey from exc


def b64(data: bytes) -> str:
    """URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def mac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


class BrokenSeal(ValueError):
    """Not something this service sealed: ``reason`` says why (never a secret)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def seal(keys: KeyRing, purpose: Purpose, payload: Any) -> str:
    """``payload`` (JSON) readable by anyone and signed: ``<body>.<signature>``, both base64."""
    body = b64(json.dumps(payload, separators=(",", ":")).encode())
    return f"{body}.{b64(mac(keys.current.key(purpose), body))}"


def unseal(keys: KeyRing, purpose: Purpose, sealed: str) -> Any:
    """The payload of what ``seal`` made under ``purpose`` with any key of the ring; its
    content is the caller's to check. ``BrokenSeal`` otherwise."""
    body, _, signature = sealed.partition(".")
    try:
        presented = unb64(signature)
    except (binascii.Error, ValueError):
        raise BrokenSeal("malformed") from None
    if not any(hmac.compare_digest(presented, mac(root.key(purpose), body)) for root in keys.all):
        raise BrokenSeal("invalid signature")
    # Signed by us: what follows cannot fail but for a bug, and is checked all the same.
    try:
        return json.loads(unb64(body))
    except (binascii.Error, ValueError):
        raise BrokenSeal("malformed") from None
