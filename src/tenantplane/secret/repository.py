from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Insert,
    Select,
    String,
    Update,
    bindparam,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.cluster.models import Cluster
from tenantplane.db.clock import clock_of
from tenantplane.secret.models import Secret
from tenantplane.tenant.models import Tenant

_SECRETS: Table = Secret.__table__  # type: ignore[assignment]
_COLUMNS = tuple(column.key for column in _SECRETS.columns)
_INSERT = insert(_SECRETS)
_TENANTS: Table = Tenant.__table__  # type: ignore[assignment]
# The reconciler's read of secrets (``many_with_tenant_names``).
_RECONCILED = select(
    _SECRETS.c.id,
    _SECRETS.c.uid,
    _SECRETS.c.tenant_id,
    _SECRETS.c.name,
    _SECRETS.c.secret_path,
    _SECRETS.c.generation,
    _SECRETS.c.deletion_requested_at,
    _SECRETS.c.sync,
    _SECRETS.c.applied,
    _SECRETS.c.phase,
    _SECRETS.c.sync_statuses,
    _SECRETS.c.conditions,
    _TENANTS.c.name.label("tenant"),
).join(_TENANTS, _TENANTS.c.id == _SECRETS.c.tenant_id)


@functools.cache
def _insert_returning(returning: ColumnElement[Any] | None) -> Insert:
    # Built once per expression (a wake-up NOTIFY is one object per name).
    return _INSERT if returning is None else _INSERT.returning(returning)


def _names_a_cluster(entries: ColumnElement[Any], postgresql: bool) -> ColumnElement[bool]:
    """Whether a JSON array of targets (``sync``, ``applied``) has an entry whose
    ``cluster`` is one of the bound ``clusters``."""
    cluster: ColumnElement[Any]
    if postgresql:
        entry = func.json_array_elements(entries).table_valued("value").alias("entry")
        cluster = entry.c.value.op("->>", return_type=String)(literal("cluster"))
    else:
        entry = func.json_each(entries).table_valued("value").alias("entry")
        cluster = func.json_extract(entry.c.value, "$.cluster")
    return exists().select_from(entry).where(cluster.in_(bindparam("clusters", expanding=True)))


@functools.cache
def _mark_due_for_clusters(postgresql: bool) -> Update:
    return (
        update(_SECRETS)
        .where(
            _SECRETS.c.tenant_id == bindparam("of_tenant"),
            or_(
                _names_a_cluster(_SECRETS.c.sync, postgresql),
                _names_a_cluster(_SECRETS.c.applied, postgresql),
            ),
        )
        .values(reconcile_at=bindparam("due_at"))
    )


class SecretRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> SecretRepository:
        return cls(session)

    # -- API side: always scoped to one tenant, deleted secrets invisible ------------------

    @staticmethod
    def _visible(tenant_id: int) -> Select[Secret]:
        """The one place where API reads are scoped: this tenant's secrets not being deleted."""
        return select(Secret).where(
            Secret.tenant_id == tenant_id, Secret.deletion_requested_at.is_(None)
        )

    async def list(self, tenant_id: int, *, for_update: bool = False) -> Sequence[Secret]:
        statement = self._visible(tenant_id).order_by(Secret.name)
        if for_update:
            statement = statement.with_for_update()
        return (await self.session.execute(statement)).scalars().all()

    async def page(self, tenant_id: int, after: str | None, limit: int | None) -> Sequence[Secret]:
        """The secrets named after ``after`` (all when None), by name, at most ``limit``."""
        statement = self._visible(tenant_id).order_by(Secret.name).limit(limit)
        if after is not None:
            statement = statement.where(Secret.name > after)
        return (await self.session.execute(statement)).scalars().all()

    async def get(self, tenant_id: int, name: str, *, for_update: bool = False) -> Secret | None:
        statement = self._visible(tenant_id).where(Secret.name == name)
        if for_update:
            # The reconciler's status writes wait for this transaction (PostgreSQL), so a
            # PATCH never fails on a version bumped behind its back.
            statement = statement.with_for_update()
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def insert(self, secret: Secret, *, returning: ColumnElement[Any] | None = None) -> None:
        """Insert ``secret`` as one plain INSERT, leaving the object out of the session: the
        unit of work would cost more than the statement (a new row has nothing to track).
        ``returning``: an expression to evaluate in the same statement (a wake-up NOTIFY).
        Raises IntegrityError when a live secret of the tenant has the name."""
        # The attributes set on the object, as parameters of a statement built once (its
        # compiled form is reused as is); the columns' defaults fill in the rest.
        values = {key: secret.__dict__[key] for key in _COLUMNS if key in secret.__dict__}
        await self.session.execute(_insert_returning(returning), values)

    async def live_cluster_names(self, tenant_id: int, names: Collection[str]) -> set[str]:
        """Which of ``names`` are clusters of the tenant that are not being deleted."""
        if not names:
            return set()
        statement = select(Cluster.name).where(
            Cluster.tenant_id == tenant_id,
            Cluster.name.in_(set(names)),
            Cluster.deletion_requested_at.is_(None),
        )
        return set((await self.session.execute(statement)).scalars())

    async def mark_due_for_clusters(self, tenant_id: int, cluster_names: Collection[str]) -> int:
        """Ask the reconciler to look again at the secrets of these clusters, those that
        sync to one or still have a copy in one (not a change of the secrets themselves: no
        version bump); how many. One UPDATE that finds them in the database: every phase
        change of a cluster runs this, and a tenant's secrets were read into the process
        for it, all of them, each time."""
        postgresql = self.session.get_bind().dialect.name == "postgresql"
        # Due now by the database's clock, by which the reconciler judges them due: a worker
        # or replica whose clock runs ahead would leave them waiting (db/clock.py).
        due_at = await clock_of(self.session).now()
        result = await self.session.execute(
            _mark_due_for_clusters(postgresql),
            {"of_tenant": tenant_id, "clusters": list(cluster_names), "due_at": due_at},
        )
        return int(result.rowcount)  # type: ignore[attr-defined]

    # -- reconciler side: one row, by id --------------------------------------------------

    async def with_tenant_name(self, row_id: int) -> tuple[Secret, str] | None:
        """The secret and its tenant's name, in one statement (None: either is gone)."""
        statement = (
            select(Secret, Tenant.name)
            .join(Tenant, Tenant.id == Secret.tenant_id)
            .where(Secret.id == row_id)
        )
        row = (await self.session.execute(statement)).one_or_none()
        return None if row is None else (row[0], row[1])

    async def many_with_tenant_names(self, row_ids: Collection[int]) -> Sequence[Any]:
        """What the reconciler reads of each secret of ``row_ids`` and its tenant's name
        (``tenant``), in one statement, as plain rows (no ORM objects); a secret or tenant
        that is gone has no row."""
        statement = _RECONCILED.where(_SECRETS.c.id.in_(list(row_ids)))
        return (await self.session.execute(statement)).all()

    async def clusters_of_tenants(
        self, tenant_ids: Collection[int], names: Collection[str], uids: Collection[str]
    ) -> Sequence[Cluster]:
        """The clusters of ``tenant_ids`` named ``names`` or of incarnation ``uids``: a
        superset of what ``clusters_for`` returns for each of those tenants, in one
        statement (the caller keeps each secret's own)."""
        if not tenant_ids or (not names and not uids):
            return []
        statement = select(Cluster).where(
            Cluster.tenant_id.in_(set(tenant_ids)),
            or_(Cluster.name.in_(set(names)), Cluster.uid.in_(set(uids))),
        )
        return (await self.session.execute(statement)).scalars().all()

    async def clusters_for(
        self, tenant_id: int, names: Collection[str], uids: Collection[str]
    ) -> Sequence[Cluster]:
        """The tenant's clusters named by targets or holding copies (by incarnation)."""
        if not names and not uids:
            return []
        statement = select(Cluster).where(
            Cluster.tenant_id == tenant_id,
            or_(Cluster.name.in_(set(names)), Cluster.uid.in_(set(uids))),
        )
        return (await self.session.execute(statement)).scalars().all()
