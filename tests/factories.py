"""Factories: rows made through the services, as an operator or API call would make them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from tenantplane.apikey import service as apikey_service
from tenantplane.billing import service as billing_service
from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.keys import KeyRing
from tenantplane.member.models import Member, Role
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.lease import Lease
from tenantplane.tenant import service as tenant_service
from tenantplane.tenant.models import Plan, TenantState


@dataclass(frozen=True)
class TenantFixture:
    name: str
    id: int
    admin_key: str
    readonly_key: str
    admin_email: str

    @property
    def path(self) -> str:
        return f"/tenants/{self.name}"


@dataclass(frozen=True)
class ClusterFixture:
    name: str
    id: int
    uid: str


class Factory:
    def __init__(self, database: Database, secret: bytes) -> None:
        self.database = database
        self.keys = KeyRing(secret)

    async def tenant(self, name: str | None = None, plan: Plan = Plan.starter) -> TenantFixture:
        name = name or f"t-{uuid.uuid4().hex[:10]}"
        admin_email = f"admin@{name}.example.com"
        async with self.database.transaction() as session:
            tenant = await tenant_service.create(session, name, plan, admin_email)
            tenant_id = tenant.id
        admin_key = await self.api_key(tenant_id, Role.admin, created_by=admin_email)
        readonly_key = await self.api_key(tenant_id, Role.readonly, created_by=admin_email)
        return TenantFixture(name, tenant_id, admin_key, readonly_key, admin_email)

    async def api_key(
        self,
        tenant_id: int,
        role: Role = Role.admin,
        *,
        created_by: str = "factory@example.com",
        display_name: str = "factory",
        expires_at: datetime | None = None,
    ) -> str:
        async with self.database.transaction() as session:
            issued = await apikey_service.issue(
                session,
                keys=self.keys,
                tenant_id=tenant_id,
                display_name=display_name,
                role=role,
                created_by=created_by,
                expires_at=expires_at,
            )
        return issued.raw_key

    async def member(self, tenant_id: int, email: str, role: Role = Role.readonly) -> None:
        async with self.database.transaction() as session:
            session.add(Member(tenant_id=tenant_id, email=email.lower(), role=role))

    def cluster(self, tenant_id: int, name: str, **spec: object) -> ClusterTimeline:
        return ClusterTimeline(self, tenant_id, name, **spec)

    @property
    def billing(self) -> BillingFactory:
        return BillingFactory(self.database)

    async def cluster_history(
        self,
        tenant_id: int,
        name: str,
        uid: str,
        at: datetime,
        event: str,
        **snapshot: object,
    ) -> None:
        """One cluster_history row (what billing meters from)."""
        from tenantplane.cluster.models import ClusterHistory

        async with self.database.transaction() as session:
            session.add(
                ClusterHistory(
                    at=at,
                    tenant_id=tenant_id,
                    cluster_id=0,
                    cluster_uid=uid,
                    cluster_name=name,
                    event=event,
                    **snapshot,
                )
            )

    async def alerting_credentials(
        self,
        tenant: str,
        *,
        org_id: str | None = None,
        auth: str = "basic",
        username: str | None = "mimir-user",
        secret: str | None = "mimir-password",  # noqa: S107 (a test credential)
    ) -> None:
        """Credentials for a remote alerting backend, as `tenantplane alerting set-credentials`."""
        from tenantplane.alerting import credentials
        from tenantplane.alerting.models import CredentialsAuth

        async with self.database.transaction() as session:
            await credentials.set_credentials(
                session,
                tenant_name=tenant,
                org_id=org_id or tenant,
                auth=CredentialsAuth(auth),
                username=username,
                secret=secret,
                keys=self.keys,
            )

    async def expire_api_key(self, raw_key: str) -> None:
        """Move a key's expiry into the past (the API refuses to create such a key)."""
        from datetime import UTC, timedelta

        from sqlalchemy import update

        from tenantplane.apikey.models import ApiKey
        from tenantplane.apikey.tokens import candidate_hashes

        async with self.database.transaction() as session:
            await session.execute(
                update(ApiKey)
                .where(ApiKey.key_hash.in_(candidate_hashes(self.keys, raw_key)))
                .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
            )

    async def cluster_row(
        self,
        tenant_id: int,
        name: str | None = None,
        *,
        phase: ClusterPhase = ClusterPhase.running,
        deleting: bool = False,
    ) -> ClusterFixture:
        """A cluster row in the state a test needs (the orchestrator does not touch it)."""
        from tenantplane.db.base import utcnow

        name = name or f"c-{uuid.uuid4().hex[:8]}"
        uid = uuid.uuid4().hex
        running = phase in (ClusterPhase.running, ClusterPhase.upgrading)
        async with self.database.transaction() as session:
            cluster = Cluster(
                uid=uid,
                tenant_id=tenant_id,
                name=name,
                version="1.33",
                cpu="1",
                memory="1Gi",
                storage="10Gi",
                cpu_millicores=1000,
                memory_bytes=2**30,
                storage_bytes=10 * 2**30,
                phase=phase.value,
                endpoint=f"https://{name}.clusters.test:6443" if running else "",
                kubernetes_version="v1.33.4" if running else "",
                deletion_requested_at=utcnow() if deleting else None,
            )
            session.add(cluster)
            await session.flush()
            return ClusterFixture(name, cluster.id, uid)

    async def tenant_state(self, tenant_id: int, state: TenantState) -> None:
        """A tenant in ``state`` (without what the operator's command also does: withdrawing
        resources, notifying billing), for tests of what the state alone decides."""
        from tenantplane.tenant.models import Tenant

        async with self.database.transaction() as session:
            await session.execute(update(Tenant).where(Tenant.id == tenant_id).values(state=state))

    async def due_clusters(self, count: int) -> list[int]:
        """Ids of ``count`` Pending clusters of a new tenant, due for the reconciler now."""
        from sqlalchemy import update

        from tenantplane.db.base import utcnow

        tenant = await self.tenant()
        ids = [
            (await self.cluster_row(tenant.id, phase=ClusterPhase.pending)).id for _ in range(count)
        ]
        async with self.database.transaction() as session:
            await session.execute(
                update(Cluster).where(Cluster.id.in_(ids)).values(reconcile_at=utcnow())
            )
        return ids

    async def set_cluster_phase(self, cluster: ClusterFixture, phase: ClusterPhase) -> None:
        from sqlalchemy import update

        async with self.database.transaction() as session:
            await session.execute(
                update(Cluster)
                .where(Cluster.uid == cluster.uid)
                # As every change the service makes: the resource version moves with it.
                .values(phase=phase.value, resource_version=Cluster.resource_version + 1)
            )

    async def delete_cluster(self, cluster: ClusterFixture) -> None:
        """The end of a cluster's deletion: its row is gone."""
        from sqlalchemy import delete

        async with self.database.transaction() as session:
            await session.execute(delete(Cluster).where(Cluster.uid == cluster.uid))

    async def request_cluster_deletion(self, cluster: ClusterFixture) -> None:
        """What DELETE on a cluster records: the cluster is Terminating."""
        from sqlalchemy import update

        from tenantplane.db.base import utcnow

        async with self.database.transaction() as session:
            await session.execute(
                update(Cluster)
                .where(Cluster.uid == cluster.uid)
                .values(
                    deletion_requested_at=utcnow(),
                    phase=ClusterPhase.terminating.value,
                    resource_version=Cluster.resource_version + 1,
                )
            )

    async def expired_api_key(self, tenant_id: int, role: Role = Role.admin) -> str:
        raw_key = await self.api_key(tenant_id, role, display_name="expired")
        await self.expire_api_key(raw_key)
        return raw_key

    async def revoked_api_key(self, tenant_id: int, role: Role = Role.admin) -> str:
        """A key that existed and was revoked (deleted) through the service."""
        from tenantplane.apikey.models import ApiKey
        from tenantplane.apikey.tokens import candidate_hashes

        raw_key = await self.api_key(tenant_id, role, display_name="revoked")
        async with self.database.transaction() as session:
            key = (
                await session.execute(
                    select(ApiKey).where(ApiKey.key_hash.in_(candidate_hashes(self.keys, raw_key)))
                )
            ).scalar_one()
            await apikey_service.revoke(session, tenant_id, key.id)
        return raw_key


class ClusterTimeline:
    """One cluster's history, written as the cluster reconciler writes it: every row a full
    snapshot of the billable state, valid until the next row."""

    def __init__(self, factory: Factory, tenant_id: int, name: str, **spec: object) -> None:
        self.factory = factory
        self.tenant_id = tenant_id
        self.name = name
        self.uid = uuid.uuid4().hex
        self.state: dict[str, object] = {
            "phase": "Pending",
            "version": "1.33",
            "kubernetes_version": "v1.33.4",
            "high_availability": False,
            "ha_enabled_at": None,
            "cpu_millicores": 1000,
            "memory_bytes": 2**30,
            "storage_bytes": 10 * 2**30,
        }
        self.state.update(spec)

    async def record(self, at: datetime, event: str, **changes: object) -> None:
        self.state.update(changes)
        await self.factory.cluster_history(
            self.tenant_id, self.name, self.uid, at, event, **self.state
        )


class BillingFactory:
    """Billing rows the tests need that no API call makes (history comes from the cluster
    reconciler, tenants' ages from the clock, the schedule row from the migration)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def backdate_tenant(self, tenant_id: int, created_at: datetime) -> None:
        from sqlalchemy import update

        from tenantplane.tenant.models import Tenant

        async with self.database.transaction() as session:
            await session.execute(
                update(Tenant).where(Tenant.id == tenant_id).values(created_at=created_at)
            )

    async def billing_schedule(self, due: datetime | None) -> None:
        """The billing-cycle reconciler's row, due at ``due`` (None: never)."""
        from tenantplane.billing.models import BillingSchedule

        async with self.database.transaction() as session:
            row = await session.get(BillingSchedule, 1)
            if row is None:
                session.add(BillingSchedule(id=1, reconcile_at=due))
            else:
                row.reconcile_at = due

    async def link(
        self,
        tenant_name: str,
        customer_id: str,
        subscription_id: str | None = None,
        address_id: str | None = None,
    ) -> None:
        async with self.database.transaction() as session:
            await billing_service.link_profile(
                session, tenant_name, customer_id, subscription_id, address_id
            )


def simulated_deployment(uid: str, **overrides: object) -> SimulatedCluster:
    """A simulator deployment row (``simulator_clusters``), still creating, not added to
    any session: for tests that write the simulator's table directly."""
    values: dict[str, object] = dict(
        uid=uid,
        name=f"name-{uid}",
        high_availability=False,
        stage="creating",
        step=0,
        last_step_at=utcnow(),
        version="1.33",
        target_version="1.33",
        patch=0,
        cpu="1",
        memory="1Gi",
        storage="1Gi",
        endpoint=f"https://{uid}.test:443",
        certificate_authority="",
        created_at=utcnow(),
    )
    return SimulatedCluster(**(values | overrides))


def fence_of(database: Database, lease: Lease, seconds: float = 30.0) -> Fence:
    """The fence a runner hands ``act`` for ``lease``: for tests that drive a reconciler's
    steps by hand."""
    return Fence(database, lease, timedelta(seconds=seconds))


async def expire_lease(database: Database, lease: Lease) -> None:
    """Make ``lease`` lapse now (as if its holder had stalled past it), token kept."""
    table = lease.table
    (key,) = table.primary_key.columns
    async with database.transaction() as session:
        await session.execute(
            update(table)
            .where(key == lease.row_id, table.c.lock_token == lease.token)
            .values(lock_expires_at=utcnow() - timedelta(hours=1))
        )
