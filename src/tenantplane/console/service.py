"""Sessions and sign-ins: started, taken, ended. Never commits (the caller's transaction)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.config import Settings
from tenantplane.console.models import ConsoleSession, ConsoleSignIn
from tenantplane.console.repository import ConsoleRepository, find_session
from tenantplane.console.tokens import LINK_PREFIX, SESSION_PREFIX, new_token, token_hash
from tenantplane.db.clock import database_now
from tenantplane.db.engine import Database
from tenantplane.http.errors import Unauthenticated
from tenantplane.keys import KeyRing, decrypt_stored, encrypt_stored

# A session's last request is recorded at most this often (one write per minute, not per
# request); the idle timeout is measured from it.
TOUCH_RESOLUTION = timedelta(seconds=60)
OIDC_SIGN_IN_LIFETIME = timedelta(minutes=10)


@dataclass(frozen=True)
class SessionIdentity:
    """Who a session acts as: a member (by email) or the API key it signed in with."""

    email: str
    api_key: str | None = None


async def start_session(
    session: AsyncSession,
    settings: Settings,
    keys: KeyRing,
    email: str,
    tenant: str,
    *,
    api_key: str | None = None,
) -> str:
    """A new session's token (the cookie's value)."""
    now = await database_now(session)
    repository = ConsoleRepository.from_session(session)
    await repository.purge_expired(now, now - idle_timeout(settings))
    token = new_token(SESSION_PREFIX)
    cipher, derivation = encrypt_stored(keys, api_key) if api_key else (None, None)
    await repository.add_session(
        ConsoleSession(
            token_hash=token_hash(token),
            email=email,
            tenant=tenant,
            api_key_cipher=cipher,
            api_key_derivation=derivation,
            created_at=now,
            last_seen_at=now,
            expires_at=now + timedelta(hours=settings.console_session_hours),
        )
    )
    return token


async def end_session(session: AsyncSession, token: str) -> None:
    await ConsoleRepository.from_session(session).end_session(token_hash(token))


def idle_timeout(settings: Settings) -> timedelta:
    return timedelta(minutes=settings.console_idle_timeout_minutes)


async def session_identity(
    database: Database, settings: Settings, keys: KeyRing, token: str
) -> SessionIdentity:
    """The identity of a live session, its last request recorded; Unauthenticated when the
    session is unknown, signed out, idle too long or past its absolute lifetime."""
    digest = token_hash(token)
    row = await find_session(database.reads, digest)
    now = await database.clock.now()
    if row is None or row.expires_at <= now or row.last_seen_at + idle_timeout(settings) <= now:
        raise Unauthenticated("console session ended: sign in again")
    if row.last_seen_at <= now - TOUCH_RESOLUTION:
        async with database.transaction() as session:
            await ConsoleRepository.from_session(session).touch(digest, now)
    if row.api_key_cipher is None:
        return SessionIdentity(email=row.email)
    api_key = decrypt_stored(keys, row.api_key_cipher, row.api_key_derivation)
    return SessionIdentity(email=row.email, api_key=api_key)


async def create_link(session: AsyncSession, settings: Settings, tenant: str, email: str) -> str:
    """A one-time sign-in link's token for ``email`` (tenant: the page it opens)."""
    now = await database_now(session)
    token = new_token(LINK_PREFIX)
    await ConsoleRepository.from_session(session).add_sign_in(
        ConsoleSignIn(
            token_hash=token_hash(token),
            kind="link",
            email=email,
            tenant=tenant,
            expires_at=now + timedelta(minutes=settings.console_sign_in_link_minutes),
        )
    )
    return token


async def take_link(session: AsyncSession, token: str) -> ConsoleSignIn | None:
    now = await database_now(session)
    return await ConsoleRepository.from_session(session).take_sign_in(
        token_hash(token), "link", now
    )


async def start_oidc(
    session: AsyncSession, tenant: str, browser: str, nonce: str, code_verifier: str
) -> str:
    """The ``state`` of a new authorization request, bound to the browser's cookie."""
    now = await database_now(session)
    state = new_token()
    await ConsoleRepository.from_session(session).add_sign_in(
        ConsoleSignIn(
            token_hash=token_hash(state),
            kind="oidc",
            tenant=tenant,
            browser_hash=token_hash(browser),
            nonce=nonce,
            code_verifier=code_verifier,
            expires_at=now + OIDC_SIGN_IN_LIFETIME,
        )
    )
    return state


async def take_oidc(session: AsyncSession, state: str, browser: str | None) -> ConsoleSignIn | None:
    """The authorization request ``state`` names, if this browser started it."""
    now = await database_now(session)
    found = await ConsoleRepository.from_session(session).take_sign_in(
        token_hash(state), "oidc", now
    )
    if found is None or browser is None or found.browser_hash != token_hash(browser):
        return None
    return found
