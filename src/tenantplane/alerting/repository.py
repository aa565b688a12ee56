from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting.document import Document, default_document
from tenantplane.alerting.models import AlertingConfig, AlertingCredentials
from tenantplane.db.clock import clock_of
from tenantplane.tenant.models import Tenant, TenantState


class AlertingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> AlertingRepository:
        return cls(session)

    @property
    def _dialect(self) -> str:
        return self.session.get_bind().dialect.name

    async def get(self, tenant_id: int) -> AlertingConfig | None:
        statement = select(AlertingConfig).where(AlertingConfig.tenant_id == tenant_id)
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def lock(self, tenant_id: int, initial: Document | None = None) -> AlertingConfig:
        """The tenant's row, created with ``initial`` (default: the default document) if
        missing, locked for update.

        On PostgreSQL the row lock makes concurrent writers of one tenant queue, so each
        applies its change to the document the previous one committed. SQLite serialises
        all writers already (BEGIN IMMEDIATE).
        """
        values = {
            "tenant_id": tenant_id,
            "document": initial if initial is not None else default_document(),
            "resource_version": 1,
            "updated_at": await clock_of(self.session).now(),
        }
        insert = postgresql.insert if self._dialect == "postgresql" else sqlite.insert
        statement = (
            insert(AlertingConfig)
            .values(**values)
            .on_conflict_do_nothing(index_elements=["tenant_id"])
        )
        await self.session.execute(statement)
        locked = (
            select(AlertingConfig)
            .where(AlertingConfig.tenant_id == tenant_id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        return (await self.session.execute(locked)).scalar_one()

    async def mark_due(self, tenant_id: int, *, remove: bool, now: datetime) -> None:
        """Make the tenant's configuration due for the backend (applied after commit by the
        ``alerting`` reconciler); ``remove``: take it off the backend instead (a reset)."""
        statement = (
            update(AlertingConfig)
            .where(AlertingConfig.tenant_id == tenant_id)
            .values(reconcile_at=now, remove_pending=remove, apply_status="pending")
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(statement)

    async def mark_all_due(self, now: datetime) -> list[str]:
        """Every live tenant's stored configuration due again (`alerting sync`)."""
        live = select(Tenant.id).where(Tenant.state != TenantState.cancelled)
        statement = (
            update(AlertingConfig)
            .where(AlertingConfig.tenant_id.in_(live))
            .values(reconcile_at=now, apply_status="pending")
            .execution_options(synchronize_session=False)
        )
        await self.session.execute(statement)
        return [name for _, name in await self.tenants_with_documents()]

    async def outcomes(self, names: Sequence[str]) -> Sequence[tuple[str, str, str, bool]]:
        """(tenant, apply_status, apply_error, still due) of these tenants' configurations."""
        statement = (
            select(
                Tenant.name,
                AlertingConfig.apply_status,
                AlertingConfig.apply_error,
                AlertingConfig.reconcile_at.is_not(None),
            )
            .join(AlertingConfig, AlertingConfig.tenant_id == Tenant.id)
            .where(Tenant.name.in_(names))
            .order_by(Tenant.name)
        )
        rows = (await self.session.execute(statement)).all()
        return [(row[0], row[1], row[2], bool(row[3])) for row in rows]

    async def all_documents(self) -> dict[str, Document]:
        """Every live tenant's stored document by tenant name (tenants that never wrote have
        none; a cancelled tenant's configuration is withdrawn and never applied again)."""
        statement = (
            select(Tenant.name, AlertingConfig.document)
            .join(AlertingConfig, AlertingConfig.tenant_id == Tenant.id)
            .where(Tenant.state != TenantState.cancelled)
            .order_by(Tenant.name)
        )
        rows = (await self.session.execute(statement)).all()
        return {name: document for name, document in rows}

    async def tenants_with_documents(self) -> Sequence[tuple[int, str]]:
        statement = (
            select(Tenant.id, Tenant.name)
            .join(AlertingConfig, AlertingConfig.tenant_id == Tenant.id)
            .where(Tenant.state != TenantState.cancelled)
            .order_by(Tenant.name)
        )
        return [(row[0], row[1]) for row in (await self.session.execute(statement)).all()]

    async def get_credentials(self, tenant_id: int) -> AlertingCredentials | None:
        return await self.session.get(AlertingCredentials, tenant_id)

    async def credentials_not_derived_with(self, derivation: str) -> Sequence[AlertingCredentials]:
        """Credentials encrypted under another key than ``derivation``, locked for update."""
        statement = (
            select(AlertingCredentials)
            .where(AlertingCredentials.key_derivation != derivation)
            .order_by(AlertingCredentials.tenant_id)
            .with_for_update()
        )
        return (await self.session.execute(statement)).scalars().all()

    def add_credentials(self, credentials: AlertingCredentials) -> None:
        self.session.add(credentials)

    async def delete_credentials(self, tenant_id: int) -> bool:
        credentials = await self.get_credentials(tenant_id)
        if credentials is None:
            return False
        await self.session.delete(credentials)
        return True
