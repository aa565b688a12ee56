"""All SQL about console sessions and sign-ins."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.console.models import ConsoleSession, ConsoleSignIn
from tenantplane.db.reads import ReadRow, Reads

_SESSION = select(
    ConsoleSession.email,
    ConsoleSession.tenant,
    ConsoleSession.api_key_cipher,
    ConsoleSession.api_key_derivation,
    ConsoleSession.last_seen_at,
    ConsoleSession.expires_at,
).where(ConsoleSession.token_hash == bindparam("token_hash"))


async def find_session(reads: Reads, digest: bytes) -> ReadRow | None:
    """A session by its token's hash (a plain read: it is on every console request)."""
    return await reads.first(_SESSION, {"token_hash": digest})


class ConsoleRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> ConsoleRepository:
        return cls(session)

    async def add_session(self, row: ConsoleSession) -> None:
        self.session.add(row)
        await self.session.flush()

    async def touch(self, digest: bytes, now: datetime) -> None:
        await self.session.execute(
            update(ConsoleSession)
            .where(ConsoleSession.token_hash == digest)
            .values(last_seen_at=now)
        )

    async def end_session(self, digest: bytes) -> None:
        await self.session.execute(
            delete(ConsoleSession).where(ConsoleSession.token_hash == digest)
        )

    async def add_sign_in(self, row: ConsoleSignIn) -> None:
        self.session.add(row)
        await self.session.flush()

    async def take_sign_in(self, digest: bytes, kind: str, now: datetime) -> ConsoleSignIn | None:
        """The sign-in, deleted whatever its state (a token is good for one use), or None
        when unknown or expired."""
        found = (
            await self.session.execute(
                select(ConsoleSignIn).where(
                    ConsoleSignIn.token_hash == digest, ConsoleSignIn.kind == kind
                )
            )
        ).scalar_one_or_none()
        if found is None:
            return None
        await self.session.delete(found)
        await self.session.flush()
        return found if found.expires_at > now else None

    async def purge_expired(self, now: datetime, idle_before: datetime) -> None:
        """Ended sessions and abandoned sign-ins (on each new sign-in: they are few)."""
        await self.session.execute(
            delete(ConsoleSession).where(
                (ConsoleSession.expires_at <= now) | (ConsoleSession.last_seen_at <= idle_before)
            )
        )
        await self.session.execute(delete(ConsoleSignIn).where(ConsoleSignIn.expires_at <= now))
