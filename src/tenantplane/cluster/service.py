"""Cluster business rules: validation, plan limits, version upgrades, deletion.

The request path only writes desired state (and the history); the reconciler does the rest.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.catalogue.plans import PlanCatalogue, PlanLimits, Resources
from tenantplane.catalogue.versions import VersionCatalogue, parse_minor
from tenantplane.cluster.events import phase_changed
from tenantplane.cluster.models import (
    Cluster,
    ClusterEvent,
    ClusterHistory,
    ClusterPhase,
    HaPhase,
)
from tenantplane.cluster.quantity import BYTE_UNIT, CPU_UNIT, positive_amount
from tenantplane.cluster.reconciler import CLUSTERS
from tenantplane.cluster.repository import (
    ClusterRepository,
    Usage,
    cluster_listing_of,
    read_cluster,
    read_clusters,
    read_connection,
)
from tenantplane.cluster.schemas import (
    ApiWarning,
    ClusterCreate,
    ClusterUpdate,
    ConnectionDetails,
    ResourcesInput,
    cluster_document,
)
from tenantplane.cluster.status import upgrade_requested
from tenantplane.db.base import epoch_microseconds
from tenantplane.db.clock import clock_of
from tenantplane.db.reads import ReadRow, Reads
from tenantplane.event.log import Draft
from tenantplane.http.documents import EncodedDocuments
from tenantplane.http.errors import (
    ApiError,
    Conflict,
    Forbidden,
    NotFound,
    ServiceUnavailable,
    ValidationFailed,
)
from tenantplane.http.etag import check_if_match
from tenantplane.http.paging import Page, SortKey
from tenantplane.reconcile.hints import notify_in_statement, wake_after_commit
from tenantplane.secret import service as secret_service

SHARED = "shared"
DEDICATED = "dedicated"
CONNECTABLE_PHASES = {ClusterPhase.running.value, ClusterPhase.upgrading.value}


@dataclass(frozen=True)
class Catalogues:
    plans: PlanCatalogue
    versions: VersionCatalogue


@dataclass(frozen=True)
class Amounts:
    cpu: str
    memory: str
    storage: str
    cpu_millicores: int
    memory_bytes: int
    storage_bytes: int


# -- validation --------------------------------------------------------------------------


def check_type(value: str) -> None:
    if value == DEDICATED:
        raise ValidationFailed(
            "dedicated clusters are reserved and not yet available; use shared",
            field="type",
            code="CLUSTER_DEDICATED_UNSUPPORTED",
        )
    if value != SHARED:
        raise ValidationFailed("type must be shared", field="type")


def resolve_version(requested: str | None, versions: VersionCatalogue) -> str:
    if requested is None:
        return versions.default
    if versions.get(requested) is None:
        supported = ", ".join(entry.version for entry in versions.versions)
        raise ValidationFailed(
            f"version {requested!r} is not supported; supported: {supported}",
            field="version",
            code="VERSION_UNSUPPORTED",
        )
    return requested


def create_warnings(
    high_availability: bool, version: str, versions: VersionCatalogue
) -> list[ApiWarning]:
    if high_availability and version == versions.oldest.version:
        return [
            ApiWarning(
                code="HA_K8S_VERSION_RETIRING",
                field="version",
                message=(
                    f"Kubernetes {version} is the oldest supported version and will be retired; "
                    "plan an upgrade of this HA cluster"
                ),
            )
        ]
    return []


def amounts_of(requested: ResourcesInput | None, base: Resources) -> Amounts:
    """Requested quantities over ``base`` (defaults on create, current values on resize)."""
    cpu = requested.cpu if requested and requested.cpu is not None else base.cpu
    memory = requested.memory if requested and requested.memory is not None else base.memory
    storage = requested.storage if requested and requested.storage is not None else base.storage
    return Amounts(
        cpu=cpu,
        memory=memory,
        storage=storage,
        cpu_millicores=positive_amount(cpu, CPU_UNIT),
        memory_bytes=positive_amount(memory, BYTE_UNIT),
        storage_bytes=positive_amount(storage, BYTE_UNIT),
    )


def check_plan_limits(
    plan: str, limits: PlanLimits, usage: Usage, amounts: Amounts, *, new_cluster: bool
) -> None:
    """403 PLAN_LIMIT_EXCEEDED naming the first dimension that would go over its limit."""
    if new_cluster and usage.clusters + 1 > limits.clusters:
        raise _limit("clusters", f"plan {plan} allows at most {limits.clusters} clusters")
    pools = (
        (
            "resources.cpu",
            usage.cpu_millicores + amounts.cpu_millicores,
            limits.cpu_millicores,
            f"cpu {limits.cpu}",
        ),
        (
            "resources.memory",
            usage.memory_bytes + amounts.memory_bytes,
            limits.memory_bytes,
            f"memory {limits.memory}",
        ),
        (
            "resources.storage",
            usage.storage_bytes + amounts.storage_bytes,
            limits.storage_bytes,
            f"storage {limits.storage}",
        ),
    )
    for field, total, limit, label in pools:
        if total > limit:
            raise _limit(field, f"plan {plan} allows {label} across all clusters of the tenant")


def _limit(field: str, message: str) -> ApiError:
    return Forbidden(f"plan limit exceeded: {message}", code="PLAN_LIMIT_EXCEEDED", field=field)


def check_upgrade(cluster: Cluster, target: str, versions: VersionCatalogue) -> None:
    resolve_version(target, versions)
    current, wanted = parse_minor(cluster.version), parse_minor(target)
    assert current is not None
    assert wanted is not None
    if wanted < current:
        raise ValidationFailed(
            f"cannot downgrade from {cluster.version} to {target}",
            field="version",
            code="VERSION_DOWNGRADE_UNSUPPORTED",
        )
    if wanted != (current[0], current[1] + 1):
        raise ValidationFailed(
            f"upgrade one minor version at a time: from {cluster.version} the next is "
            f"{current[0]}.{current[1] + 1}",
            field="version",
            code="VERSION_SKIP_UNSUPPORTED",
        )
    running = cluster.kubernetes_version.removeprefix("v").rsplit(".", 1)[0]
    if cluster.phase != ClusterPhase.running.value or running != cluster.version:
        raise Conflict(
            f"the cluster is {cluster.phase}; a version change starts from Running",
            code="CLUSTER_BUSY",
            field="version",
        )


# -- use cases ---------------------------------------------------------------------------


async def create(
    session: AsyncSession, tenant_id: int, body: ClusterCreate, catalogues: Catalogues
) -> tuple[Cluster, list[ApiWarning]]:
    check_type(body.type)
    version = resolve_version(body.version, catalogues.versions)
    warnings = create_warnings(body.high_availability, version, catalogues.versions)
    amounts = amounts_of(body.resources, catalogues.plans.defaults.resources)
    repository = ClusterRepository.from_session(session)
    locked = await repository.lock_tenant_for_create(tenant_id, body.name)
    if locked is None:
        raise NotFound("tenant")
    plan, name_taken = locked
    if name_taken:
        raise Conflict(f"cluster {body.name} already exists", field="name")
    limits = catalogues.plans.limits(plan)
    # The database's time (db/clock.py), shown as createdAt in the answer and due at once
    # for a reconciler judging by that same clock.
    now = await clock_of(session).now()
    values: dict[str, Any] = dict(
        uid=uuid.uuid4().hex,
        tenant_id=tenant_id,
        name=body.name,
        created_at=now,
        type=SHARED,
        version=version,
        high_availability=body.high_availability,
        cpu=amounts.cpu,
        memory=amounts.memory,
        storage=amounts.storage,
        cpu_millicores=amounts.cpu_millicores,
        memory_bytes=amounts.memory_bytes,
        storage_bytes=amounts.storage_bytes,
        alerts=body.alerts or {},
        generation=1,
        resource_version=1,
        phase=ClusterPhase.pending.value,
        ha_phase=HaPhase.pending.value if body.high_availability else HaPhase.none.value,
        reconcile_at=now,
    )
    room = Usage(
        clusters=limits.clusters,
        cpu_millicores=limits.cpu_millicores,
        memory_bytes=limits.memory_bytes,
        storage_bytes=limits.storage_bytes,
    )
    try:
        cluster = await repository.insert_within(
            tenant_id, values, room, returning=notify_in_statement(session, CLUSTERS)
        )
    except IntegrityError as exc:
        raise Conflict(f"cluster {body.name} already exists", field="name") from exc
    if cluster is None:
        # Over a limit: which one, for the error (the tenant is still locked).
        usage = await repository.usage(tenant_id)
        check_plan_limits(plan.value, limits, usage, amounts, new_cluster=True)
        raise RuntimeError(f"cluster {body.name} not inserted though within the limits")
    return cluster, warnings


async def cluster_listing(
    reads: Reads, documents: EncodedDocuments, tenant_id: int, page: Page
) -> tuple[list[orjson.Fragment], SortKey | None]:
    """A page of the tenant's clusters as the API shows them, encoded (http/documents.py),
    and the sort key of its last when more remain. A tenant has at most its plan's limit of
    clusters: the page is cut from the whole list of their versions."""

    async def read(ids: list[int]) -> list[tuple[ReadRow, dict[str, Any]]]:
        return [(row, cluster_document(row)) for row in await read_clusters(reads, tenant_id, ids)]

    return await documents.page(reads, cluster_listing_of(tenant_id, read, _listing_key), page)


def _listing_key(row: ReadRow) -> SortKey:
    """The clusters' order: by creation, then id (a versions row of cluster_listing_of:
    id, _, _, created_at)."""
    return (epoch_microseconds(row[3]), row[0])


async def shown(reads: Reads, tenant_id: int, name: str) -> dict[str, Any]:
    """One cluster as the API shows it (JSON-ready)."""
    row = await read_cluster(reads, tenant_id, name)
    if row is None:
        raise NotFound("cluster")
    return cluster_document(row)


_NOT_NULL = ("name", "type", "version", "high_availability", "resources", "alerts")


def _field_alias(name: str) -> str:
    return ClusterUpdate.model_fields[name].alias or name


def _check_update_shape(cluster: Cluster, body: ClusterUpdate) -> None:
    fields = body.model_fields_set
    if not fields:
        raise ValidationFailed(
            "the request names no updatable field", field=None, code="NO_UPDATABLE_FIELDS"
        )
    for name in _NOT_NULL:
        if name in fields and getattr(body, name) is None:
            raise ValidationFailed(
                f"{_field_alias(name)} must not be null", field=_field_alias(name)
            )
    for name, current in (("name", cluster.name), ("type", cluster.type)):
        if name in fields and getattr(body, name) != current:
            raise ValidationFailed(f"{name} cannot be changed", field=name, code="FIELD_IMMUTABLE")
    if "high_availability" in fields and body.high_availability != cluster.high_availability:
        raise ValidationFailed(
            "highAvailability is set at creation only; it cannot be enabled or disabled "
            "on an existing cluster",
            field="highAvailability",
            code="HA_ENABLE_ON_EXISTING_UNSUPPORTED",
        )


async def update(
    session: AsyncSession,
    tenant_id: int,
    name: str,
    body: ClusterUpdate,
    if_match: str | None,
    catalogues: Catalogues,
) -> Cluster:
    repository = ClusterRepository.from_session(session)
    cluster = await repository.get(tenant_id, name, for_update=True)
    if cluster is None:
        raise NotFound("cluster")
    check_if_match(if_match, cluster.resource_version)
    _check_update_shape(cluster, body)
    if cluster.is_terminating:
        raise Conflict("the cluster is being deleted", code="CLUSTER_TERMINATING")
    changed = False
    now = await clock_of(session).now()
    if body.version is not None and body.version != cluster.version:
        check_upgrade(cluster, body.version, catalogues.versions)
        cluster.version = body.version
        # The answer (and every read until the reconciler acts) shows the new desire at once.
        cluster.conditions = upgrade_requested(cluster, now)
        changed = True
    if body.resources is not None:
        changed |= await _resize(repository, cluster, body.resources, catalogues)
    if body.alerts is not None and body.alerts != cluster.alerts:
        cluster.alerts = body.alerts
        changed = True
    if changed:
        cluster.generation += 1
        cluster.reconcile_at = now
        await session.flush()
        repository.record(ClusterHistory.snapshot(cluster, ClusterEvent.spec_changed, now))
        wake_after_commit(session, CLUSTERS)
    return cluster


async def _resize(
    repository: ClusterRepository,
    cluster: Cluster,
    requested: ResourcesInput,
    catalogues: Catalogues,
) -> bool:
    current = Resources(cpu=cluster.cpu, memory=cluster.memory, storage=cluster.storage)
    amounts = amounts_of(requested, current)
    if (amounts.cpu, amounts.memory, amounts.storage) == (
        cluster.cpu,
        cluster.memory,
        cluster.storage,
    ):
        return False
    plan = await repository.lock_tenant(cluster.tenant_id)
    assert plan is not None
    check_plan_limits(
        plan.value,
        catalogues.plans.limits(plan),
        await repository.usage(cluster.tenant_id, excluding=cluster.id),
        amounts,
        new_cluster=False,
    )
    cluster.cpu, cluster.memory, cluster.storage = amounts.cpu, amounts.memory, amounts.storage
    cluster.cpu_millicores = amounts.cpu_millicores
    cluster.memory_bytes = amounts.memory_bytes
    cluster.storage_bytes = amounts.storage_bytes
    return True


async def delete(
    session: AsyncSession, tenant_id: int, name: str, if_match: str | None
) -> tuple[Cluster, Draft | None]:
    """Request deletion: Terminating at once, gone once the orchestrator has torn it down.
    With the cluster, its phase change to record (None when it was being deleted already),
    for the caller to append last in its transaction (event/log.py)."""
    repository = ClusterRepository.from_session(session)
    cluster = await repository.get(tenant_id, name, for_update=True)
    if cluster is None:
        raise NotFound("cluster")
    check_if_match(if_match, cluster.resource_version)
    if cluster.is_terminating:
        return cluster, None
    change = await _request_deletion(session, repository, cluster)
    await secret_service.clusters_changed(session, tenant_id, [cluster.name])
    return cluster, change


async def delete_all(session: AsyncSession, tenant_id: int) -> list[Draft]:
    """Request the deletion of every cluster of a tenant (a cancelled tenant's); returns the
    phase changes of those not already being deleted (their names are the events'
    resources), for the caller to append last in its transaction."""
    repository = ClusterRepository.from_session(session)
    changes = []
    for cluster in await repository.list(tenant_id, for_update=True):
        if not cluster.is_terminating:
            changes.append(await _request_deletion(session, repository, cluster))
    if changes:
        names = [change.name for change in changes]
        await secret_service.clusters_changed(session, tenant_id, names)
    return changes


async def _request_deletion(
    session: AsyncSession, repository: ClusterRepository, cluster: Cluster
) -> Draft:
    """Terminating from now on (no longer metered); the reconciler tears it down. Returns
    the phase change (cluster.phase_changed) to record."""
    now = await clock_of(session).now()
    change = phase_changed(cluster.name, cluster.phase, ClusterPhase.terminating.value)
    cluster.deletion_requested_at = now
    cluster.phase = ClusterPhase.terminating.value
    cluster.generation += 1
    cluster.reconcile_at = now
    await session.flush()
    repository.record(ClusterHistory.snapshot(cluster, ClusterEvent.phase_changed, now))
    wake_after_commit(session, CLUSTERS)
    return change


async def connection_details(
    reads: Reads, tenant_id: int, name: str, retry_after: int
) -> ConnectionDetails:
    cluster = await read_connection(reads, tenant_id, name)
    if cluster is None:
        raise NotFound("cluster")
    if cluster.phase not in CONNECTABLE_PHASES or not cluster.endpoint:
        raise ServiceUnavailable(
            f"the cluster is {cluster.phase}; connection details are available once it is Running",
            code="CLUSTER_NOT_READY",
            retry_after=retry_after,
        )
    return ConnectionDetails(
        endpoint=cluster.endpoint, certificate_authority=cluster.certificate_authority
    )
