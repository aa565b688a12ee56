from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Integer, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.tenant.models import Tenant, TenantState

# Namespace of the advisory locks that order tenant writes against state changes ("stat").
_STATE_LOCK_CLASS = 0x7374_6174


# Every write runs one of these: built once, executed with the tenant's id as a parameter,
# so their compiled forms are reused as they are. On PostgreSQL, the shared state lock and
# the state read after it are one call of a function (migration 0013 says why it must be a
# function); SQLite has no such locks.
_STATE_FOR_WRITE = select(
    func.tenant_state_for_write(
        bindparam("tenant_id", type_=Integer), type_=Tenant.__table__.c.state.type
    )
)
_STATE = select(Tenant.state).where(Tenant.id == bindparam("tenant_id"))


class TenantRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> TenantRepository:
        return cls(session)

    async def get_by_name(self, name: str) -> Tenant | None:
        statement = select(Tenant).where(Tenant.name == name)
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def id_of(self, name: str) -> int | None:
        return (await self.session.execute(select(Tenant.id).where(Tenant.name == name))).scalar()

    async def get(self, tenant_id: int) -> Tenant | None:
        return await self.session.get(Tenant, tenant_id)

    async def list(self) -> Sequence[Tenant]:
        return (await self.session.execute(select(Tenant).order_by(Tenant.name))).scalars().all()

    def add(self, tenant: Tenant) -> None:
        self.session.add(tenant)

    @property
    def _is_postgresql(self) -> bool:
        return self.session.get_bind().dialect.name == "postgresql"

    async def state_for_write(self, tenant_id: int) -> TenantState | None:
        """The tenant's state as a write must see it: on PostgreSQL a shared advisory lock,
        held to the end of the transaction, makes a state change (which takes the lock
        exclusively) wait for writes in flight, and writes arriving during a change wait
        for it and then read the new state. SQLite runs one writer at a time anyway."""
        statement = _STATE_FOR_WRITE if self._is_postgresql else _STATE
        state = (await self.session.execute(statement, {"tenant_id": tenant_id})).scalar()
        return None if state is None else TenantState(state)

    async def lock_for_state_change(self, name: str) -> Tenant | None:
        """The tenant, locked against concurrent writes and state changes until commit."""
        tenant = await self.get_by_name(name)
        if tenant is None:
            return None
        if self._is_postgresql:
            await self.session.execute(
                select(func.pg_advisory_xact_lock(_STATE_LOCK_CLASS, tenant.id))
            )
        statement = (
            select(Tenant).where(Tenant.id == tenant.id).execution_options(populate_existing=True)
        )
        if self._is_postgresql:
            statement = statement.with_for_update()
        return (await self.session.execute(statement)).scalar_one()
