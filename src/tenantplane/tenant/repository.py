from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.tenant.models import Tenant


class TenantRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> TenantRepository:
        return cls(session)

    async def get_by_name(self, name: str) -> Tenant | None:
        statement = select(Tenant).where(Tenant.name == name)
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def get(self, tenant_id: int) -> Tenant | None:
        return await self.session.get(Tenant, tenant_id)

    async def list(self) -> Sequence[Tenant]:
        return (await self.session.execute(select(Tenant).order_by(Tenant.name))).scalars().all()

    def add(self, tenant: Tenant) -> None:
        self.session.add(tenant)
