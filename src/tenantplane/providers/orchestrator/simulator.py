"""The simulator orchestrator: behaves like vCluster deployments on a host cluster.

Each simulated deployment moves one step per ``step_seconds`` (TENANTPLANE_SIMULATOR_STEP_SECONDS),
whether or not anyone is looking, as a real host cluster would; every call first catches up
with the steps due since the last one. Steps are timed by the database's clock
(db/clock.py), which every worker shares: by its own clock, a worker ten minutes ahead
would take ten minutes of steps at once and one behind none for ten minutes. Its state is
kept in ``simulator_clusters`` so that it survives restarts of tenantplane. Sequences
(docs/clusters.md):

- create: etcd and control-plane replicas become Ready one by one: etcd until quorum, the
  first control-plane replica (the API serves: ``ready``), then the rest alternately;
- upgrade (from ``ready`` with every replica up): each control-plane replica in turn goes
  down and comes back on the new version; the version changes after the last one;
- delete: replicas stop, then the deployment is gone;
- faults (operator): ``fail_replicas`` makes replicas unready until ``recover``, after which
  they restart and become Ready one per step.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import String, any_, bindparam, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import Executable
from sqlalchemy.sql.schema import Table

from tenantplane.db.engine import Database
from tenantplane.db.rows import ROWS, encode_json, insert_from_json, update_rows
from tenantplane.providers.orchestrator import ClusterSpec, Observation, Replicas, Stage
from tenantplane.providers.orchestrator.certificates import new_cluster_ca
from tenantplane.providers.orchestrator.simulator_models import SimulatedCluster
from tenantplane.reconcile.fence import WriteFence

Component = Literal["control-plane", "etcd"]
_DELETED = "deleted"
# Steps applied in one call at most: bounds the work after a long outage.
_MAX_STEPS_PER_CALL = 64
_TABLE: Table = SimulatedCluster.__table__  # type: ignore[assignment]
# The columns a call may change (``act_many_in`` writes them all for a changed row).
_MUTABLE = (
    "stage",
    "step",
    "last_step_at",
    "version",
    "target_version",
    "patch",
    "cpu",
    "memory",
    "storage",
    "control_plane_up",
    "etcd_up",
    "control_plane_failed",
    "etcd_failed",
    "upgrade_count",
    "delete_count",
)


def replicas_desired(high_availability: bool) -> int:
    return 3 if high_availability else 1


class UnknownSimulatedCluster(LookupError):
    pass


class SimulatorOrchestrator:
    def __init__(
        self, database: Database, step_seconds: float, domain: str = "clusters.tenantplane.test"
    ) -> None:
        self.database = database
        self.step = timedelta(seconds=step_seconds)
        self.domain = domain

    async def apply(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        async with self.database.transaction() as session:
            await fence.hold_in(session)
            now = await self.database.clock.now()
            return await self._apply(session, spec, await self._get(session, spec.uid), now)

    async def delete(self, spec: ClusterSpec, fence: WriteFence) -> Observation:
        async with self.database.transaction() as session:
            await fence.hold_in(session)
            now = await self.database.clock.now()
            return self._delete(await self._get(session, spec.uid), now)

    async def act_many(self, calls: Sequence[tuple[ClusterSpec, bool]]) -> list[Observation]:
        """``apply`` (or ``delete``, when the call's flag is set) for several clusters in one
        transaction: their deployments read in one statement, the changes written together
        at commit. A host cluster would take these calls one by one; the simulator keeps
        its state in the database, where one transaction per call was most of the cost of
        many clusters provisioning at once."""
        async with self.database.transaction() as session:
            return await self.act_many_in(session, calls)

    async def act_many_in(
        self, session: AsyncSession, calls: Sequence[tuple[ClusterSpec, bool]]
    ) -> list[Observation]:
        """``act_many`` in the caller's transaction (the cluster reconciler's apply): the
        changes are committed, or rolled back, with what the caller records of them."""
        now = await self.database.clock.now()
        rows = await self._get_many(session, [spec.uid for spec, _ in calls])
        new = {spec.uid: spec for spec, deleting in calls if not deleting and spec.uid not in rows}
        if new:
            rows.update(await self._provision(session, list(new.values()), now))
        # The deployments as plain objects from here on: their changes are written below,
        # all in one statement, rather than by the session's unit of work (a flush per
        # object, and an executemany of their UPDATEs, was a fifth of a worker's CPU).
        for deployment in rows.values():
            session.expunge(deployment)
        before = {uid: _mutable_state(deployment) for uid, deployment in rows.items()}
        observations = []
        for spec, deleting in calls:
            row = rows.get(spec.uid)
            if deleting:
                observations.append(self._delete(row, now))
            elif row is not None and spec.uid in new:
                observations.append(self._observe(row, now))  # provisioned by this call
            else:
                observations.append(await self._apply(session, spec, row, now))
        changed = [
            {"uid": uid, **dict(zip(_MUTABLE, state, strict=True))}
            for uid, deployment in rows.items()
            if (state := _mutable_state(deployment)) != before[uid]
        ]
        # Written now: the caller's statements that follow may read them.
        await update_rows(session, _TABLE, changed)
        return observations

    async def _apply(
        self, session: AsyncSession, spec: ClusterSpec, row: SimulatedCluster | None, now: datetime
    ) -> Observation:
        if row is None:
            provisioned = await self._provision(session, [spec], now)
            return self._observe(provisioned[spec.uid], now)
        if row.stage in (Stage.deleting, _DELETED):
            self._advance(row, now, spec)
            return self._observe(row, now)
        self._advance(row, now, spec)
        row.cpu, row.memory, row.storage = spec.cpu, spec.memory, spec.storage  # online
        if spec.version != row.target_version and _fully_up(row) and row.stage == Stage.ready:
            self._start_upgrade(row, spec, now)
        return self._observe(row, now)

    def _delete(self, row: SimulatedCluster | None, now: datetime) -> Observation:
        if row is None:
            return Observation(stage=Stage.gone, settled=True)
        self._advance(row, now, None)
        if row.stage not in (Stage.deleting, _DELETED):
            row.stage, row.step, row.last_step_at = Stage.deleting, 0, now
            row.delete_count += 1
        return self._observe(row, now)

    async def fail_replicas(self, uid: str, component: Component, count: int) -> Observation:
        async with self.database.transaction() as session:
            row = await self._require(session, uid)
            self._advance(row, await self.database.clock.now(), None)
            if component == "control-plane":
                row.control_plane_failed = min(
                    row.control_plane_up, row.control_plane_failed + count
                )
            else:
                row.etcd_failed = min(row.etcd_up, row.etcd_failed + count)
            return observe(row)

    async def recover(self, uid: str) -> Observation:
        """Failed replicas restart; they become Ready again one per step."""
        async with self.database.transaction() as session:
            row = await self._require(session, uid)
            now = await self.database.clock.now()
            self._advance(row, now, None)
            row.control_plane_up -= row.control_plane_failed
            row.etcd_up -= row.etcd_failed
            row.control_plane_failed = row.etcd_failed = 0
            row.last_step_at = now
            return observe(row)

    async def state(self, uid: str) -> SimulatedCluster | None:
        async with self.database.transaction() as session:
            return await self._get(session, uid)

    # -- internals ---------------------------------------------------------------------------

    def _observe(self, row: SimulatedCluster, now: datetime) -> Observation:
        """``observe``, with when the next step is due (one step after the last one)."""
        observation = observe(row)
        if observation.settled:
            return observation
        due = max((row.last_step_at + self.step - now).total_seconds(), 0.0)
        return replace(observation, next_change_seconds=due)

    async def _get(self, session: AsyncSession, uid: str) -> SimulatedCluster | None:
        statement = select(SimulatedCluster).where(SimulatedCluster.uid == uid)
        if not self.database.is_sqlite:
            statement = statement.with_for_update()
        return (await session.execute(statement)).scalar_one_or_none()

    async def _get_many(
        self, session: AsyncSession, uids: Sequence[str]
    ) -> dict[str, SimulatedCluster]:
        # Locked in one order (by uid), so that two batches never wait on each other's rows.
        if self.database.is_sqlite:
            statement = _DEPLOYMENTS.where(SimulatedCluster.uid.in_(sorted(set(uids))))
            found = await session.scalars(statement)
        else:
            found = await session.scalars(_DEPLOYMENTS_LOCKED, {"uids": sorted(set(uids))})
        return {row.uid: row for row in found}

    async def _require(self, session: AsyncSession, uid: str) -> SimulatedCluster:
        row = await self._get(session, uid)
        if row is None or row.stage == _DELETED:
            raise UnknownSimulatedCluster(uid)
        return row

    async def _provision(
        self, session: AsyncSession, specs: Sequence[ClusterSpec], now: datetime
    ) -> dict[str, SimulatedCluster]:
        """Create the deployments in one INSERT that returns them, counting every
        provisioning call received.

        A call that finds no deployment provisions one. Two such calls for one cluster (two
        reconcilers that both believe they hold its lease) both count: the second finds the
        first's row at insert time and increments ``provision_count`` instead of failing, as
        a real host cluster would have received two creates.
        """
        # In one order (by uid), as ``_get_many`` locks: two batches never wait on each
        # other's rows. The rows come back locked (inserted, or updated on conflict).
        values = sorted((self._new_deployment(spec, now) for spec in specs), key=_uid)
        statement: Executable
        parameters: list[dict[str, object]] | dict[str, str]
        if self.database.is_sqlite:
            statement, parameters = _PROVISION_SQLITE, values
        else:
            statement = _provision_from_json(tuple(values[0]))
            parameters = {ROWS: encode_json(values)}
        rows = await session.scalars(
            statement, parameters, execution_options={"populate_existing": True}
        )
        return {row.uid: row for row in rows}

    def _new_deployment(self, spec: ClusterSpec, now: datetime) -> dict[str, object]:
        return dict(
            uid=spec.uid,
            name=spec.name,
            high_availability=spec.high_availability,
            stage=Stage.creating,
            step=0,
            last_step_at=now,
            version=spec.version,
            target_version=spec.version,
            patch=spec.patch,
            cpu=spec.cpu,
            memory=spec.memory,
            storage=spec.storage,
            control_plane_up=0,
            etcd_up=0,
            control_plane_failed=0,
            etcd_failed=0,
            endpoint=f"https://{spec.name}-{spec.uid[:8]}.{self.domain}:443",
            certificate_authority=new_cluster_ca(f"{spec.tenant}/{spec.name} cluster CA", now),
            provision_count=1,
            upgrade_count=0,
            delete_count=0,
            created_at=now,
        )

    def _start_upgrade(self, row: SimulatedCluster, spec: ClusterSpec, now: datetime) -> None:
        row.target_version, row.stage, row.step, row.last_step_at = (
            spec.version,
            Stage.upgrading,
            0,
            now,
        )
        row.upgrade_count += 1

    def _advance(self, row: SimulatedCluster, now: datetime, spec: ClusterSpec | None) -> None:
        for _ in range(_MAX_STEPS_PER_CALL):
            if _settled(row):
                row.last_step_at = now
                return
            if now - row.last_step_at < self.step:
                return
            _one_step(row, spec)
            row.last_step_at += self.step


# A batch's deployments, in uid order; PostgreSQL: their uids as one array parameter (the
# same text for any number, each looked up in the primary key), locked.
_DEPLOYMENTS = select(SimulatedCluster).order_by(SimulatedCluster.uid)
_DEPLOYMENTS_LOCKED = _DEPLOYMENTS.where(
    SimulatedCluster.uid == any_(bindparam("uids", type_=ARRAY(String)))
).with_for_update()
# The deployments' INSERT counts a second provisioning call instead of failing.
_PROVISIONED_AGAIN = {"provision_count": SimulatedCluster.provision_count + 1}
# SQLite: the deployments as the statement's rows (insertmanyvalues).
_PROVISION_SQLITE = (
    sqlite_insert(SimulatedCluster)
    .on_conflict_do_update(index_elements=[SimulatedCluster.uid], set_=_PROVISIONED_AGAIN)
    .returning(SimulatedCluster)
)


@functools.lru_cache(maxsize=4)
def _provision_from_json(columns: tuple[str, ...]) -> Executable:
    """``_PROVISION_SQLITE`` for PostgreSQL: the deployments as one JSON parameter
    (``insert_from_json``), returned as objects (the ORM takes an INSERT … SELECT's rows
    for columns)."""
    inserted = insert_from_json(_TABLE, columns).on_conflict_do_update(
        index_elements=[SimulatedCluster.uid], set_=_PROVISIONED_AGAIN
    )
    return select(SimulatedCluster).from_statement(inserted.returning(*_TABLE.c))


def _mutable_state(row: SimulatedCluster) -> tuple[object, ...]:
    return tuple(getattr(row, name) for name in _MUTABLE)


def _uid(values: dict[str, object]) -> str:
    return str(values["uid"])


def _one_step(row: SimulatedCluster, spec: ClusterSpec | None) -> None:
    desired = replicas_desired(row.high_availability)
    if row.stage == Stage.deleting:
        if row.control_plane_up or row.etcd_up:
            row.control_plane_up = row.etcd_up = 0
            row.control_plane_failed = row.etcd_failed = 0
        else:
            row.stage = _DELETED
        return
    if row.stage == Stage.upgrading:
        # Replace control-plane replicas one at a time: down (even step), up (odd step).
        if row.step % 2 == 0:
            row.control_plane_up -= 1
        else:
            row.control_plane_up += 1
        row.step += 1
        if row.step >= 2 * desired:
            row.version = row.target_version
            if spec is not None and spec.version == row.target_version:
                row.patch = spec.patch
            row.stage, row.step = Stage.ready, 0
        return
    quorum = desired // 2 + 1
    if row.etcd_up < quorum:
        row.etcd_up += 1
    elif row.control_plane_up < 1:
        row.control_plane_up += 1
    elif row.etcd_up < desired and row.etcd_up <= row.control_plane_up:
        row.etcd_up += 1
    elif row.control_plane_up < desired:
        row.control_plane_up += 1
    elif row.etcd_up < desired:
        row.etcd_up += 1
    if row.stage == Stage.creating and row.control_plane_up >= 1 and row.etcd_up >= quorum:
        row.stage = Stage.ready


def _fully_up(row: SimulatedCluster) -> bool:
    desired = replicas_desired(row.high_availability)
    return row.control_plane_up == desired and row.etcd_up == desired


def _settled(row: SimulatedCluster) -> bool:
    if row.stage == _DELETED:
        return True
    return row.stage == Stage.ready and _fully_up(row) and row.version == row.target_version


def observe(row: SimulatedCluster) -> Observation:
    if row.stage == _DELETED:
        return Observation(stage=Stage.gone, settled=True, message="deleted")
    desired = replicas_desired(row.high_availability)
    control_plane = Replicas(desired, max(0, row.control_plane_up - row.control_plane_failed))
    etcd = Replicas(desired, max(0, row.etcd_up - row.etcd_failed))
    return Observation(
        stage=row.stage,
        version=row.version,
        kubernetes_version=f"v{row.version}.{row.patch}",
        endpoint=row.endpoint,
        certificate_authority=row.certificate_authority,
        control_plane=control_plane,
        etcd=etcd,
        settled=_settled(row),
        message=_message(row, control_plane, etcd),
        metrics={
            "controlPlaneReplicasReady": control_plane.ready,
            "etcdReplicasReady": etcd.ready,
            "allocatable": {"cpu": row.cpu, "memory": row.memory, "storage": row.storage},
        },
    )


def _message(row: SimulatedCluster, control_plane: Replicas, etcd: Replicas) -> str:
    replicas = (
        f"control plane {control_plane.ready}/{control_plane.desired} ready, "
        f"etcd {etcd.ready}/{etcd.desired} ready"
    )
    if row.stage == Stage.upgrading:
        return f"upgrading {row.version} to {row.target_version}: {replicas}"
    if row.stage == Stage.deleting:
        return f"deleting: {replicas}"
    return replicas
