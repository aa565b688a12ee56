from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.reads import ReadRow, Reads
from tenantplane.member.models import Member, Role
from tenantplane.tenant.models import Tenant

_MEMBERSHIP = (
    select(Tenant.id.label("tenant_id"), Member.role, Member.email)
    .join(Member, Member.tenant_id == Tenant.id)
    .where(Tenant.name == bindparam("tenant"), Member.email == bindparam("email"))
)


async def find_membership(reads: Reads, tenant_name: str, email: str) -> ReadRow | None:
    """The tenant's id and the member's role and email, if ``email`` is a member of the tenant
    named ``tenant_name`` (a plain read)."""
    return await reads.first(_MEMBERSHIP, {"tenant": tenant_name, "email": email.lower()})


class MemberRepository:
    """All SQL about members. Every query is scoped by tenant id (or, for authentication,
    by tenant name), and emails are compared in their normalised, lower-case form."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> MemberRepository:
        return cls(session)

    async def list(
        self, tenant_id: int, after: str | None = None, limit: int | None = None
    ) -> Sequence[Member]:
        """The members whose email sorts after ``after`` (all when None), at most ``limit``."""
        statement = (
            select(Member).where(Member.tenant_id == tenant_id).order_by(Member.email).limit(limit)
        )
        if after is not None:
            statement = statement.where(Member.email > after)
        return (await self.session.execute(statement)).scalars().all()

    async def get(self, tenant_id: int, email: str) -> Member | None:
        statement = select(Member).where(
            Member.tenant_id == tenant_id, Member.email == email.lower()
        )
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def count_admins(self, tenant_id: int) -> int:
        statement = select(func.count()).where(
            Member.tenant_id == tenant_id, Member.role == Role.admin
        )
        return int((await self.session.execute(statement)).scalar_one())

    async def list_version(self, tenant_id: int) -> int:
        statement = select(Tenant.members_version).where(Tenant.id == tenant_id)
        return int((await self.session.execute(statement)).scalar_one())

    async def lock_list(self, tenant_id: int) -> int:
        """Lock the tenant's member list until the transaction ends; return its version.

        Every member write takes this lock first, so checks that span rows (the email is
        free, another admin remains) cannot interleave with a concurrent write. PostgreSQL
        locks the tenant row; SQLite's write transactions are serialised already (BEGIN
        IMMEDIATE), and SQLAlchemy leaves FOR UPDATE out there.
        """
        # NO KEY UPDATE: member writes wait for each other, not the foreign-key checks of
        # the tenant's other writes (a cluster's or a secret's create).
        statement = (
            select(Tenant.members_version)
            .where(Tenant.id == tenant_id)
            .with_for_update(key_share=True)
        )
        return int((await self.session.execute(statement)).scalar_one())

    async def bump_list_version(self, tenant_id: int) -> int:
        """Advance the member list's version (Core UPDATE: the tenant's own version and
        ETag do not change when its members do)."""
        statement = (
            update(Tenant)
            .where(Tenant.id == tenant_id)
            .values(members_version=Tenant.members_version + 1)
            .returning(Tenant.members_version)
            .execution_options(synchronize_session=False)
        )
        return int((await self.session.execute(statement)).scalar_one())

    def add(self, member: Member) -> None:
        self.session.add(member)

    async def delete(self, member: Member) -> None:
        await self.session.delete(member)
