"""Cluster access tokens, and each cluster's credential towards the token webhook.

A cluster access token (``tpc_…``) is what kubectl presents to a tenant cluster's API server,
which asks tenantplane to review it (cluster/review.py). It is signed, not stored: its claims
(the cluster's uid, the principal, the expiry, a nonce) travel in the token under an HMAC made
with a key derived for this purpose alone (keys.py), so issuing one writes nothing and any
replica can check it. What it does not say — whether the principal is still a member, or the
key still exists, and with which role — is read at each review, so that removing a member or
revoking a key ends its tokens (docs/security.md, "Cluster access").

A cluster's webhook credential is the bearer token its API server sends with each review:
an HMAC of the cluster's uid, so nothing is stored for it either, and a cluster cannot review
tokens as another (each path names the cluster; the credential must be that cluster's).
Both are checked against every key of the ring, so that a rotation of the secret key does not
cut clusters off while the old key is among the fallbacks.
"""

from __future__ import annotations

import base64
import enum
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from tenantplane.config import Settings
from tenantplane.http.openapi import API_PREFIX
from tenantplane.keys import BrokenSeal, KeyRing, Purpose, RootKey, b64, mac, seal, unseal
from tenantplane.providers.orchestrator import TokenWebhook

# The token webhook's path under the API prefix (cluster/review_routes.py serves it).
REVIEW_PATH = "/webhooks/kubernetes/clusters/{uid}/tokenreview"

TOKEN_PREFIX = "tpc_"  # noqa: S105 (a prefix, not a secret)
WEBHOOK_CREDENTIAL_PREFIX = "tpw_"
# Far above what a token of ours is (about 170 characters): anything longer is refused
# before it is decoded.
MAX_TOKEN_LENGTH = 1024
_NONCE_BYTES = 16
# What a review says of a token whose seal is broken (keys.BrokenSeal's reasons).
_SEAL_REASONS = {"malformed": "malformed token", "invalid signature": "invalid token signature"}


class Subject(enum.StrEnum):
    """Who a token was issued to."""

    member = "m"
    api_key = "k"


@dataclass(frozen=True)
class TokenClaims:
    cluster_uid: str
    subject: Subject
    subject_id: str  # the member's id, or the API key's
    expires_at: datetime
    # A member's: when it became one, in microseconds since the epoch. Its id alone would not
    # do: SQLite gives a removed member's id to the next member added.
    member_since: int = 0


class InvalidToken(Exception):
    """Not a token of ours: the review's reason (said to the cluster, never a secret)."""


def mint(keys: KeyRing, claims: TokenClaims) -> str:
    payload = {
        "c": claims.cluster_uid,
        "s": claims.subject.value,
        "i": claims.subject_id,
        "e": int(claims.expires_at.timestamp()),
        "n": b64(secrets.token_bytes(_NONCE_BYTES)),
    }
    if claims.member_since:
        payload["t"] = claims.member_since
    return TOKEN_PREFIX + seal(keys, Purpose.cluster_tokens, payload)


def verify(keys: KeyRing, token: str) -> TokenClaims:
    """The claims of a token this service signed (under any key of the ring); its expiry is
    the caller's to check. ``InvalidToken`` otherwise."""
    if len(token) > MAX_TOKEN_LENGTH:
        raise InvalidToken("token too long")
    if not token.startswith(TOKEN_PREFIX):
        raise InvalidToken("not a tenantplane cluster token")
    try:
        payload = unseal(keys, Purpose.cluster_tokens, token.removeprefix(TOKEN_PREFIX))
    except BrokenSeal as broken:
        raise InvalidToken(_SEAL_REASONS[broken.reason]) from None
    # Signed by us: what follows cannot fail but for a bug, and is checked all the same.
    try:
        return TokenClaims(
            cluster_uid=str(payload["c"]),
            subject=Subject(payload["s"]),
            subject_id=str(payload["i"]),
            expires_at=datetime.fromtimestamp(int(payload["e"]), UTC),
            member_since=int(payload.get("t", 0)),
        )
    except (ValueError, KeyError, TypeError):
        raise InvalidToken("malformed token") from None


def _credential(root: RootKey, cluster_uid: str) -> str:
    return WEBHOOK_CREDENTIAL_PREFIX + b64(mac(root.key(Purpose.token_webhook), cluster_uid))


def webhook_credential(keys: KeyRing, cluster_uid: str) -> str:
    """The bearer token cluster ``cluster_uid``'s API server presents to the token webhook
    (written into its webhook kubeconfig at provisioning)."""
    return _credential(keys.current, cluster_uid)


def is_webhook_credential(keys: KeyRing, cluster_uid: str, presented: str) -> bool:
    if len(presented) > MAX_TOKEN_LENGTH:
        return False
    return any(
        hmac.compare_digest(presented.encode(), _credential(root, cluster_uid).encode())
        for root in keys.all
    )


def token_webhooks(settings: Settings) -> Callable[[str], TokenWebhook] | None:
    """What each cluster's API server is configured with to review tokens here, by cluster
    uid (None when this deployment sets no webhook URL). The CA file and the key ring are
    read once, not at every look at a cluster."""
    base = settings.cluster_token_webhook_url
    if not base:
        return None
    keys = settings.keyring()
    authority = ""
    if settings.cluster_token_webhook_ca_file is not None:
        authority = base64.b64encode(settings.cluster_token_webhook_ca_file.read_bytes()).decode()

    def of(cluster_uid: str) -> TokenWebhook:
        return TokenWebhook(
            url=f"{base}{API_PREFIX}{REVIEW_PATH.format(uid=cluster_uid)}",
            credential=webhook_credential(keys, cluster_uid),
            certificate_authority=authority,
            cache_ttl=settings.cluster_token_webhook_cache_ttl,
        )

    return of
