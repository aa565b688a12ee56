from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVarTuple

from sqlalchemy import (
    JSON,
    ColumnElement,
    Integer,
    Select,
    Text,
    and_,
    any_,
    bindparam,
    cast,
    func,
    insert,
    literal,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Result
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Executable
from sqlalchemy.sql.dml import ReturningInsert
from sqlalchemy.sql.schema import Table

from tenantplane.cluster.models import Cluster, ClusterEvent, ClusterHistory
from tenantplane.db.reads import ReadRow, Reads, as_stored, digest_of
from tenantplane.db.rows import encode_json, insert_rows
from tenantplane.http.documents import Listing, Reader
from tenantplane.http.paging import SortKey
from tenantplane.tenant.models import Plan, Tenant


@dataclass(frozen=True)
class Usage:
    """What a tenant's clusters hold of its plan (Terminating clusters included)."""

    clusters: int
    cpu_millicores: int
    memory_bytes: int
    storage_bytes: int


# The columns a cluster shows in the API.
CLUSTER_LISTED = (
    "name",
    "type",
    "version",
    "high_availability",
    "cpu",
    "memory",
    "storage",
    "alerts",
    "created_at",
    "resource_version",
    "observed_generation",
    "phase",
    "endpoint",
    "kubernetes_version",
    "conditions",
    "metrics",
    "ha_configured",
    "ha_enabled_at",
    "ha_phase",
    "ha_replicas_ready",
    "ha_etcd_replicas_ready",
)


# The plain reads' tenant scope, in one place (the ORM queries start at ``_readable``).
_OF_TENANT = Cluster.tenant_id == bindparam("tenant_id")
_NAMED = Cluster.name == bindparam("name")
_SHOWN = select(Cluster.id, *(getattr(Cluster, column) for column in CLUSTER_LISTED)).where(
    _OF_TENANT
)
_ONE_SHOWN = _SHOWN.where(_NAMED)
_BY_IDS = _SHOWN.where(Cluster.id.in_(bindparam("ids", expanding=True)))
_VERSIONS = (
    select(Cluster.id, Cluster.resource_version, Cluster.name, as_stored(Cluster.created_at))
    .where(_OF_TENANT)
    .order_by(Cluster.created_at, Cluster.id)
)
_CONNECTION = select(Cluster.phase, Cluster.endpoint, Cluster.certificate_authority).where(
    _OF_TENANT, _NAMED
)


_VERSIONS_DIGEST = digest_of(_VERSIONS)


def cluster_listing_of(
    tenant_id: int, read: Reader, sort_key: Callable[[ReadRow], SortKey]
) -> Listing:
    """The tenant's clusters as a list (http/documents.py): their (id, resource_version,
    name, created_at as stored) in listing order, and ``read`` for their documents.
    A tenant has at most its plan's limit of clusters (250)."""
    return Listing("cluster", _VERSIONS, _VERSIONS_DIGEST, {"tenant_id": tenant_id}, read, sort_key)


async def read_clusters(
    reads: Reads, tenant_id: int, cluster_ids: Sequence[int]
) -> Sequence[ReadRow]:
    """The tenant's clusters of ``cluster_ids`` as plain rows of the columns the API shows."""
    return await reads.all(_BY_IDS, {"tenant_id": tenant_id, "ids": list(cluster_ids)})


async def read_cluster(reads: Reads, tenant_id: int, name: str) -> ReadRow | None:
    """One cluster as a plain row of the columns the API shows."""
    return await reads.first(_ONE_SHOWN, {"tenant_id": tenant_id, "name": name})


async def read_connection(reads: Reads, tenant_id: int, name: str) -> ReadRow | None:
    """What a kubeconfig needs of one cluster, and its phase."""
    return await reads.first(_CONNECTION, {"tenant_id": tenant_id, "name": name})


_CLUSTERS: Table = Cluster.__table__  # type: ignore[assignment]
_Row = TypeVarTuple("_Row")
# The rows a reconciler holds (``get_leased``): in id order, read afresh.
_LEASED = select(Cluster).order_by(Cluster.id).execution_options(populate_existing=True)
_LEASED_WITH_TENANTS = (
    select(Cluster, Tenant)
    .outerjoin(Tenant, Tenant.id == Cluster.tenant_id)
    .order_by(Cluster.id)
    .execution_options(populate_existing=True)
)


@functools.cache
def _held_locked(statement: Select[Any]) -> Select[Any]:
    """``statement`` (``_LEASED…``) of the clusters whose ids are the parameter ``ids`` (an
    array: the planner looks each up in the primary key, whatever their number) and whose
    tokens are still those of ``tokens`` (a JSON object by id), locked (PostgreSQL); built
    once, its text the same for any number of rows."""
    token = func.json_extract_path_text(
        cast(bindparam("tokens", type_=Text), JSON), cast(Cluster.id, Text)
    )
    held = and_(
        Cluster.id == any_(bindparam("ids", type_=ARRAY(Integer))), Cluster.lock_token == token
    )
    return statement.where(held).with_for_update(of=Cluster)


# The create's statements (an API write: the lock and the insert of every create of the
# tenant), built once: building the insert alone cost ~0.6 ms a request.
_TENANT_PLAN = select(Tenant.plan).where(Tenant.id == bindparam("tenant_id"))
# NO KEY UPDATE: creates of one tenant wait for each other, but the foreign-key checks of
# writes to the tenant's rows (FOR KEY SHARE on the tenant: a secret's create, a cluster
# row updated twice in one transaction) do not wait for a create.
_TENANT_PLAN_LOCKED = _TENANT_PLAN.with_for_update(key_share=True)
# A create's lock, with whether the tenant has a cluster of the new one's name.
_TENANT_PLAN_NAME_TAKEN = _TENANT_PLAN.add_columns(
    select(Cluster.id).where(_OF_TENANT, _NAMED).exists()
)
_TENANT_PLAN_NAME_TAKEN_LOCKED = _TENANT_PLAN_NAME_TAKEN.with_for_update(key_share=True, of=Tenant)


@functools.cache
def _insert_within(
    columns: tuple[str, ...], returning: ColumnElement[Any] | None, with_history: bool
) -> Executable:
    """INSERT … SELECT of one cluster whose values are the parameters named after
    ``columns``, selected only if the tenant's clusters, it included, stay within the room
    (parameters ``room_*``); ``returning`` (a wake-up NOTIFY: one object per name) too;
    ``with_history``: its ``created`` history row too."""
    table = _CLUSTERS
    usage = (
        select(
            func.count(Cluster.id).label("clusters"),
            func.coalesce(func.sum(Cluster.cpu_millicores), 0).label("cpu"),
            func.coalesce(func.sum(Cluster.memory_bytes), 0).label("memory"),
            func.coalesce(func.sum(Cluster.storage_bytes), 0).label("storage"),
        )
        .where(_OF_TENANT)
        .subquery()
    )
    value = {name: bindparam(name, type_=table.c[name].type) for name in columns}
    row = (
        select(*value.values())
        .select_from(usage)
        .where(
            usage.c.clusters + 1 <= bindparam("room_clusters"),
            usage.c.cpu + value["cpu_millicores"] <= bindparam("room_cpu_millicores"),
            usage.c.memory + value["memory_bytes"] <= bindparam("room_memory_bytes"),
            usage.c.storage + value["storage_bytes"] <= bindparam("room_storage_bytes"),
        )
    )
    extra = () if returning is None else (returning,)
    inserted = insert(table).from_select(list(columns), row).returning(*table.c, *extra)
    # The inserted row as a Cluster (the ORM's own INSERT would take the parameters as
    # rows to insert, not as the statement's binds).
    if with_history:
        return select(Cluster).from_statement(_with_created_history(inserted))
    return select(Cluster).from_statement(inserted)


def _with_created_history(inserted: ReturningInsert[Any]) -> Select[Any]:
    """``inserted`` with the cluster's ``created`` history row written by the same statement
    (PostgreSQL's data-modifying WITH): every create of a tenant waits on its lock, which
    this statement's answer and the COMMIT then hold for one round trip instead of two."""
    row = inserted.cte("inserted")
    history: Table = ClusterHistory.__table__  # type: ignore[assignment]
    snapshot = {
        "at": row.c.created_at,
        "tenant_id": row.c.tenant_id,
        "cluster_id": row.c.id,
        "cluster_uid": row.c.uid,
        "cluster_name": row.c.name,
        "event": literal(ClusterEvent.created.value),
        "phase": row.c.phase,
        "version": row.c.version,
        "kubernetes_version": row.c.kubernetes_version,
        "high_availability": row.c.high_availability,
        "ha_enabled_at": row.c.ha_enabled_at,
        "cpu_millicores": row.c.cpu_millicores,
        "memory_bytes": row.c.memory_bytes,
        "storage_bytes": row.c.storage_bytes,
    }
    recorded = (
        insert(history).from_select(list(snapshot), select(*snapshot.values())).cte("recorded")
    )
    return select(row).add_cte(recorded)


class ClusterRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> ClusterRepository:
        return cls(session)

    @property
    def _locks_rows(self) -> bool:
        return self.session.get_bind().dialect.name != "sqlite"

    def _readable(self, tenant_id: int) -> Select[Cluster]:
        """Every tenant-facing query starts here: the tenant scope lives in one place."""
        return select(Cluster).where(Cluster.tenant_id == tenant_id)

    async def list(self, tenant_id: int, *, for_update: bool = False) -> Sequence[Cluster]:
        statement = self._readable(tenant_id).order_by(Cluster.created_at, Cluster.id)
        if for_update and self._locks_rows:
            statement = statement.with_for_update()
        return (await self.session.execute(statement)).scalars().all()

    async def get(self, tenant_id: int, name: str, *, for_update: bool = False) -> Cluster | None:
        """One cluster; ``for_update`` locks its row on PostgreSQL until commit (SQLite's
        transactions already run one writer at a time)."""
        statement = self._readable(tenant_id).where(Cluster.name == name)
        if for_update and self._locks_rows:
            statement = statement.with_for_update()
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def get_leased(self, tokens: dict[int, str]) -> dict[int, Cluster]:
        """The rows a reconciler holds (cluster id → its lease token), locked, in one
        statement; a row whose lease was lost since is left out (reconciler side: no tenant
        scope). Locked in id order, so that two batches never wait on each other's rows."""
        rows = await self._execute_leased(_LEASED, tokens)
        return {cluster.id: cluster for cluster in rows.scalars()}

    async def get_leased_with_tenants(
        self, tokens: dict[int, str]
    ) -> dict[int, tuple[Cluster, Tenant | None]]:
        """``get_leased`` with each cluster's tenant, in one statement (only the clusters'
        rows are locked)."""
        rows = await self._execute_leased(_LEASED_WITH_TENANTS, tokens)
        return {cluster.id: (cluster, tenant) for cluster, tenant in rows}

    async def _execute_leased(
        self, statement: Select[*_Row], tokens: dict[int, str]
    ) -> Result[*_Row]:
        held = sorted(tokens.items())
        found: Result[*_Row]
        if self._locks_rows:
            parameters = {"ids": [row_id for row_id, _ in held], "tokens": encode_json(tokens)}
            found = await self.session.execute(_held_locked(statement), parameters)
        else:
            found = await self.session.execute(
                statement.where(tuple_(Cluster.id, Cluster.lock_token).in_(held))
            )
        return found

    async def get_with_tenants(
        self, cluster_ids: Sequence[int]
    ) -> dict[int, tuple[Cluster, Tenant | None]]:
        """Clusters by id with their tenants, in one statement (reconciler side)."""
        statement = (
            select(Cluster, Tenant)
            .outerjoin(Tenant, Tenant.id == Cluster.tenant_id)
            .where(Cluster.id.in_(cluster_ids))
        )
        rows = (await self.session.execute(statement)).all()
        return {cluster.id: (cluster, tenant) for cluster, tenant in rows}

    async def find(self, tenant_name: str, name: str) -> Cluster | None:
        """A cluster by tenant and cluster name (operator tools)."""
        statement = (
            select(Cluster)
            .join(Tenant, Tenant.id == Cluster.tenant_id)
            .where(Tenant.name == tenant_name, Cluster.name == name)
        )
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def lock_tenant(self, tenant_id: int) -> Plan | None:
        """Serialise plan-limit checks of one tenant (two creates must not both fit); its
        plan, or None when the tenant is gone."""
        statement = _TENANT_PLAN_LOCKED if self._locks_rows else _TENANT_PLAN
        found = await self.session.execute(statement, {"tenant_id": tenant_id})
        plan: Plan | None = found.scalar_one_or_none()
        return plan

    async def lock_tenant_for_create(self, tenant_id: int, name: str) -> tuple[Plan, bool] | None:
        """``lock_tenant`` for a create: its plan, and whether the tenant has a cluster named
        ``name``, in the statement that takes the lock (one round trip, not two); None when
        the tenant is gone. On PostgreSQL the name is read in the statement's snapshot,
        taken before it waited for the lock: a create of the same name that committed
        meanwhile is refused by the unique constraint instead."""
        statement = _TENANT_PLAN_NAME_TAKEN_LOCKED if self._locks_rows else _TENANT_PLAN_NAME_TAKEN
        found = (
            await self.session.execute(statement, {"tenant_id": tenant_id, "name": name})
        ).one_or_none()
        return None if found is None else (found[0], bool(found[1]))

    async def usage(self, tenant_id: int, *, excluding: int | None = None) -> Usage:
        statement = select(
            func.count(Cluster.id),
            func.coalesce(func.sum(Cluster.cpu_millicores), 0),
            func.coalesce(func.sum(Cluster.memory_bytes), 0),
            func.coalesce(func.sum(Cluster.storage_bytes), 0),
        ).where(Cluster.tenant_id == tenant_id)
        if excluding is not None:
            statement = statement.where(Cluster.id != excluding)
        count, cpu, memory, storage = (await self.session.execute(statement)).one()
        return Usage(int(count), int(cpu), int(memory), int(storage))

    async def insert_within(
        self,
        tenant_id: int,
        values: dict[str, Any],
        room: Usage,
        *,
        returning: ColumnElement[Any] | None = None,
    ) -> Cluster | None:
        """Insert a cluster of ``values`` if the tenant's clusters, this one included, stay
        within ``room``, with its ``created`` history row; None (nothing inserted)
        otherwise. ``returning``: an expression evaluated in the same statement for an
        inserted row (a wake-up NOTIFY).

        One statement: the limit check and the insert share its snapshot, taken after the
        caller's ``lock_tenant_for_create``, so a concurrent create of the tenant (waiting on
        that lock) sees this row. Before, the usage query and the insert were two round trips more
        while every other create of the tenant waited on the lock.
        """
        parameters = {
            **values,
            "tenant_id": tenant_id,
            "room_clusters": room.clusters,
            "room_cpu_millicores": room.cpu_millicores,
            "room_memory_bytes": room.memory_bytes,
            "room_storage_bytes": room.storage_bytes,
        }
        # SQLite has no data-modifying WITH: the history row is added to the session there.
        in_statement = self._locks_rows
        statement = _insert_within(tuple(values), returning, in_statement)
        cluster: Cluster | None = (
            await self.session.execute(statement, parameters)
        ).scalar_one_or_none()
        if cluster is not None and not in_statement:
            self.record(ClusterHistory.snapshot(cluster, ClusterEvent.created, cluster.created_at))
        return cluster

    async def mark_due(self, uid: str, at: datetime) -> None:
        """Ask the reconciler to look at the cluster of incarnation ``uid`` at ``at``."""
        await self.session.execute(
            update(Cluster).where(Cluster.uid == uid).values(reconcile_at=at)
        )

    def record(self, entry: ClusterHistory) -> None:
        self.session.add(entry)

    async def record_all(self, rows: Sequence[dict[str, Any]]) -> None:
        """History rows (``ClusterHistory.values``) in one INSERT whose text does not
        depend on their number (``insert_rows``): no ORM objects to build, flush and read
        the keys of back (a fifth of a batch of the reconciler's work, most of it in the
        flush)."""
        await insert_rows(self.session, ClusterHistory.__table__, rows)  # type: ignore[arg-type]

    async def history(self, cluster_uid: str) -> Sequence[ClusterHistory]:
        statement = (
            select(ClusterHistory)
            .where(ClusterHistory.cluster_uid == cluster_uid)
            .order_by(ClusterHistory.at, ClusterHistory.id)
        )
        return (await self.session.execute(statement)).scalars().all()
