from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.member.models import Member, Role
from tenantplane.tenant.models import Tenant


class MemberRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> MemberRepository:
        return cls(session)

    async def find_membership(self, tenant_name: str, email: str) -> tuple[Tenant, Member] | None:
        statement = (
            select(Tenant, Member)
            .join(Member, Member.tenant_id == Tenant.id)
            .where(Tenant.name == tenant_name, Member.email == email.lower())
        )
        row = (await self.session.execute(statement)).one_or_none()
        return None if row is None else (row[0], row[1])

    async def list(self, tenant_id: int) -> Sequence[Member]:
        statement = select(Member).where(Member.tenant_id == tenant_id).order_by(Member.email)
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

    def add(self, member: Member) -> None:
        self.session.add(member)

    async def delete(self, member: Member) -> None:
        await self.session.delete(member)
