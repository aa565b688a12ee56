"""Business rules of managed secrets. Never commits; wakes the reconciler after commit."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.clock import clock_of
from tenantplane.http.errors import (
    Conflict,
    NotFound,
    ValidationFailed,
)
from tenantplane.http.etag import check_if_match
from tenantplane.http.names import path_name
from tenantplane.http.paging import WHOLE, Page, SortKey, split_page
from tenantplane.reconcile import wake_after_commit
from tenantplane.reconcile.hints import notify_in_statement
from tenantplane.secret.models import Secret, SyncPhase
from tenantplane.secret.repository import SecretRepository
from tenantplane.secret.schemas import SecretCreate, SyncTargetIn
from tenantplane.secret.status import (
    initial_conditions,
    reconciling_conditions,
    reconciling_entry,
    statuses_for_new_targets,
    target_key,
)

RECONCILER = "secrets"


async def resolve_targets(
    repository: SecretRepository,
    tenant_id: int,
    secret_name: str,
    targets: Sequence[SyncTargetIn],
) -> list[dict[str, str]]:
    """Targets with their default secretName, checked against the tenant's clusters."""
    live = await repository.live_cluster_names(tenant_id, {target.cluster for target in targets})
    resolved: list[dict[str, str]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for index, target in enumerate(targets):
        if target.cluster not in live:
            raise ValidationFailed(
                f"sync[{index}].cluster: no cluster named {target.cluster!r} in this tenant",
                field=f"sync[{index}].cluster",
                code="UNKNOWN_CLUSTER",
            )
        entry = {
            "cluster": target.cluster,
            "namespace": target.namespace,
            "secretName": target.secret_name or secret_name,
        }
        key = target_key(entry)
        if key in seen:
            raise ValidationFailed(
                f"sync[{index}] duplicates sync[{seen[key]}]: the same cluster, namespace "
                "and secretName",
                field=f"sync[{index}]",
                code="DUPLICATE_SYNC_TARGET",
            )
        seen[key] = index
        resolved.append(entry)
    return resolved


def _schedule(session: AsyncSession, secret: Secret, now: datetime) -> None:
    secret.reconcile_at = now
    wake_after_commit(session, RECONCILER)


async def create(session: AsyncSession, tenant_id: int, body: SecretCreate) -> Secret:
    """Create the secret in the request's transaction (which holds the tenant's state lock:
    the access check took it), where its audit event is written too."""
    repository = SecretRepository.from_session(session)
    targets: list[dict[str, str]] = []
    if body.sync:
        # A taken name is answered before the targets are checked (409 before 400). Without
        # targets the unique constraint alone answers it, a round trip fewer per create.
        if await repository.get(tenant_id, body.name) is not None:
            raise _name_taken(body.name)
        targets = await resolve_targets(repository, tenant_id, body.name, body.sync)
    secret = _new_secret(await clock_of(session).now(), tenant_id, body, targets)
    try:
        # A concurrent create of the same name fails here, at its INSERT (the unique index),
        # not at commit. No savepoint: the request's transaction is rolled back on the
        # conflict anyway.
        await repository.insert(secret, returning=notify_in_statement(session, RECONCILER))
    except IntegrityError as exc:
        raise _name_taken(body.name) from exc
    return secret


def _new_secret(
    now: datetime, tenant_id: int, body: SecretCreate, targets: list[dict[str, str]]
) -> Secret:
    """``now``: the database's time (db/clock.py): the answer's createdAt and conditions
    show it, and the secret is due at once for a reconciler judging by that same clock."""
    return Secret(
        uid=uuid.uuid4().hex,
        tenant_id=tenant_id,
        name=body.name,
        created_at=now,
        secret_path=body.secret_path,
        sync=targets,
        generation=1,
        deletion_requested_at=None,
        phase=SyncPhase.pending.value,
        observed_generation=0,
        sync_statuses=[reconciling_entry(target) for target in targets],
        conditions=initial_conditions(1, now),
        applied=[],
        resource_version=1,
        reconcile_at=now,
    )


def _name_taken(name: str) -> Conflict:
    return Conflict(f"a secret named {name!r} already exists", field="name")


async def list_secrets(
    session: AsyncSession, tenant_id: int, page: Page = WHOLE
) -> tuple[Sequence[Secret], SortKey | None]:
    """A page of the tenant's secrets by name, and the last one's name when more remain."""
    after = None if page.after is None else str(page.after[0])
    limit = None if page.limit is None else page.limit + 1
    found = await SecretRepository.from_session(session).page(tenant_id, after, limit)
    return split_page(found, page.limit, lambda secret: (secret.name,))


async def get(
    session: AsyncSession, tenant_id: int, name: str, *, for_update: bool = False
) -> Secret:
    path_name(name, what="secret")
    secret = await SecretRepository.from_session(session).get(
        tenant_id, name, for_update=for_update
    )
    if secret is None:
        raise NotFound("secret")
    return secret


async def replace_targets(
    session: AsyncSession,
    tenant_id: int,
    name: str,
    targets: Sequence[SyncTargetIn],
    if_match: str | None,
) -> Secret:
    secret = await get(session, tenant_id, name, for_update=True)
    check_if_match(if_match, secret.resource_version)
    repository = SecretRepository.from_session(session)
    resolved = await resolve_targets(repository, tenant_id, secret.name, targets)
    if _set_targets(session, secret, resolved, await clock_of(session).now()):
        await session.flush()
    return secret


def _set_targets(
    session: AsyncSession, secret: Secret, resolved: list[dict[str, str]], now: datetime
) -> bool:
    """A new generation with these targets, changed at ``now``; False when they are the
    current ones (nothing changes: no new generation, the ETag stays)."""
    if resolved == secret.sync:
        return False
    secret.generation += 1
    secret.sync = resolved
    secret.sync_statuses = statuses_for_new_targets(resolved, secret.sync_statuses)
    # Until the reconciler has acted on this generation (removing copies included).
    secret.phase = SyncPhase.pending.value
    secret.conditions = reconciling_conditions(secret.conditions, secret.generation, now)
    _schedule(session, secret, now)
    return True


async def withdraw_all(session: AsyncSession, tenant_id: int) -> list[str]:
    """Remove every sync target of a tenant's secrets (a cancelled tenant's): the reconciler
    then removes their copies from the clusters. Returns the secrets that had targets."""
    secrets = await SecretRepository.from_session(session).list(tenant_id, for_update=True)
    now = await clock_of(session).now()
    withdrawn = [secret.name for secret in secrets if _set_targets(session, secret, [], now)]
    await session.flush()
    return withdrawn


async def delete(session: AsyncSession, tenant_id: int, name: str, if_match: str | None) -> None:
    """Hide the secret at once; the reconciler removes its copies, then the row."""
    secret = await get(session, tenant_id, name, for_update=True)
    check_if_match(if_match, secret.resource_version)
    now = await clock_of(session).now()
    secret.deletion_requested_at = now
    secret.generation += 1
    _schedule(session, secret, now)
    await session.flush()


async def clusters_changed(
    session: AsyncSession, tenant_id: int, cluster_names: Collection[str]
) -> None:
    """For the cluster feature: a cluster became Running, left Running or is being deleted;
    secrets syncing to it are looked at again at once instead of at their next resync."""
    if await SecretRepository.from_session(session).mark_due_for_clusters(tenant_id, cluster_names):
        wake_after_commit(session, RECONCILER)
