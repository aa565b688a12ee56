from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy import select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting.document import Document, default_document
from tenantplane.alerting.models import AlertingConfig, AlertingCredentials
from tenantplane.tenant.models import Tenant

# Serialises writers that render every tenant into one shared Alertmanager file.
_SHARED_RENDER_LOCK_KEY = 0x7465_6E61_6E74  # "tenant"


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
            "updated_at": datetime.now(UTC),
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

    async def lock_shared_render(self) -> None:
        """Writers that render all tenants together take turns (transaction-scoped lock)."""
        if self._dialect == "postgresql":
            await self.session.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SHARED_RENDER_LOCK_KEY}
            )

    async def all_documents(self) -> dict[str, Document]:
        """Every tenant's stored document by tenant name (tenants that never wrote have none)."""
        statement = (
            select(Tenant.name, AlertingConfig.document)
            .join(AlertingConfig, AlertingConfig.tenant_id == Tenant.id)
            .order_by(Tenant.name)
        )
        rows = (await self.session.execute(statement)).all()
        return {name: document for name, document in rows}

    async def tenants_with_documents(self) -> Sequence[tuple[int, str]]:
        statement = (
            select(Tenant.id, Tenant.name)
            .join(AlertingConfig, AlertingConfig.tenant_id == Tenant.id)
            .order_by(Tenant.name)
        )
        return [(row[0], row[1]) for row in (await self.session.execute(statement)).all()]

    async def get_credentials(self, tenant_id: int) -> AlertingCredentials | None:
        return await self.session.get(AlertingCredentials, tenant_id)

    def add_credentials(self, credentials: AlertingCredentials) -> None:
        self.session.add(credentials)

    async def delete_credentials(self, tenant_id: int) -> bool:
        credentials = await self.get_credentials(tenant_id)
        if credentials is None:
            return False
        await self.session.delete(credentials)
        return True
