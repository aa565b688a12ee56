from __future__ import annotations

from datetime import datetime

from sqlalchemy import LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from tenantplane.db.base import Base
from tenantplane.db.clock import database_time


class ConsoleSession(Base):
    """A signed-in browser. The cookie holds the raw token; only its SHA-256 is stored."""

    __tablename__ = "console_sessions"

    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    # The member's email; for a session signed in with an API key, a label naming it.
    email: Mapped[str] = mapped_column(String(320))
    # The tenant chosen at sign-in (where /console/ leads).
    tenant: Mapped[str] = mapped_column(String(63))
    # A session signed in with an API key acts as that key: the key itself, encrypted
    # (tenantplane.keys.encrypt_stored), is presented to the API on each request, so that
    # its revocation or expiry ends the session at once.
    api_key_cipher: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    api_key_derivation: Mapped[str | None] = mapped_column(String(40), default=None)
    created_at: Mapped[datetime] = mapped_column(default=database_time)
    last_seen_at: Mapped[datetime] = mapped_column(default=database_time)
    expires_at: Mapped[datetime] = mapped_column(index=True)


class ConsoleSignIn(Base):
    """A sign-in under way: an OIDC authorization request (its state, nonce and PKCE
    verifier) or a one-time link printed by `tenantplane console-login`. Taken (deleted)
    by its first use."""

    __tablename__ = "console_sign_ins"

    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8))
    email: Mapped[str | None] = mapped_column(String(320), default=None)
    tenant: Mapped[str | None] = mapped_column(String(63), default=None)
    # OIDC: the browser that started the sign-in (a cookie's value, hashed), the nonce the
    # ID token must carry and the PKCE code verifier.
    browser_hash: Mapped[bytes | None] = mapped_column(LargeBinary(32), default=None)
    nonce: Mapped[str | None] = mapped_column(String(64), default=None)
    code_verifier: Mapped[str | None] = mapped_column(String(128), default=None)
    expires_at: Mapped[datetime] = mapped_column(index=True)
