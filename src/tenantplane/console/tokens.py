"""The console's tokens: session cookies, sign-in links and OIDC states, and CSRF tokens.

Every token is 32 random bytes; only its SHA-256 is stored (a guess of 2^256 cannot be
helped by a slow hash). The CSRF token is an HMAC of the session token under a key derived
for that purpose: it needs no storage, and a page of one session is useless to another.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from tenantplane.keys import KeyRing, Purpose

SESSION_PREFIX = "tpc_"
LINK_PREFIX = "tpl_"


def new_token(prefix: str = "") -> str:
    return prefix + secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def is_session_token(token: str) -> bool:
    return token.startswith(SESSION_PREFIX)


def csrf_token(keys: KeyRing, session_token: str) -> str:
    digest = hmac.new(keys.current.key(Purpose.console_csrf), session_token.encode(), "sha256")
    return digest.hexdigest()


def csrf_matches(keys: KeyRing, session_token: str, presented: str | None) -> bool:
    if not presented:
        return False
    return hmac.compare_digest(csrf_token(keys, session_token), presented)
