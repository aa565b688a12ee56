"""Sync status: per-target entries, the overall phase and Kubernetes-style conditions.

Pure functions over plain dicts (the JSON stored in ``secrets``), shared by the API (which
resets the status of new targets) and the reconciler (which records what it observed).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from tenantplane.db.base import rfc3339
from tenantplane.secret.models import SyncPhase

TargetKey = tuple[str, str, str]


class Reason(enum.StrEnum):
    """Reasons of sync status entries and conditions (docs/secrets.md)."""

    reconciling = "Reconciling"  # desired state changed, not yet acted on
    synced = "Synced"
    cluster_not_ready = "ClusterNotReady"
    cluster_deleted = "ClusterDeleted"
    secret_path_not_found = "SecretPathNotFound"  # noqa: S105 (a reason, not a password)
    vault_access_denied = "VaultAccessDenied"
    vault_unavailable = "VaultUnavailable"
    sync_error = "SyncError"
    # Conditions only.
    no_targets = "NoTargets"
    sync_pending = "SyncPending"
    sync_failed = "SyncFailed"
    found = "Found"
    not_checked = "NotChecked"


class ConditionType(enum.StrEnum):
    ready = "Ready"
    secret_path_resolved = "SecretPathResolved"  # noqa: S105 (a condition type)


def target_key(target: Mapping[str, Any]) -> TargetKey:
    return (str(target["cluster"]), str(target["namespace"]), str(target["secretName"]))


def status_entry(
    target: Mapping[str, Any],
    phase: SyncPhase,
    reason: Reason,
    message: str,
    last_sync_time: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "cluster": target["cluster"],
        "namespace": target["namespace"],
        "secretName": target["secretName"],
        "phase": phase.value,
        "reason": reason.value,
        "message": message,
    }
    if last_sync_time is not None:
        entry["lastSyncTime"] = last_sync_time
    return entry


def reconciling_entry(target: Mapping[str, Any]) -> dict[str, Any]:
    return status_entry(
        target, SyncPhase.pending, Reason.reconciling, "waiting for the sync controller"
    )


def statuses_for_new_targets(
    targets: Sequence[Mapping[str, Any]], previous: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Targets kept by a PATCH keep their last observed entry; new ones start Pending."""
    known = {target_key(entry): dict(entry) for entry in previous}
    return [known.get(target_key(target)) or reconciling_entry(target) for target in targets]


def overall_phase(statuses: Sequence[Mapping[str, Any]]) -> SyncPhase:
    """Failed if any target failed, Synced if every target is (so also with no targets),
    Pending otherwise."""
    phases = {entry["phase"] for entry in statuses}
    if SyncPhase.failed.value in phases:
        return SyncPhase.failed
    if phases <= {SyncPhase.synced.value}:
        return SyncPhase.synced
    return SyncPhase.pending


def ready_condition(
    statuses: Sequence[Mapping[str, Any]], phase: SyncPhase, observed: bool
) -> tuple[str, Reason, str]:
    """(status, reason, message) of the Ready condition."""
    if not observed:
        return "False", Reason.reconciling, "waiting for the sync controller"
    total = len(statuses)
    synced = sum(1 for entry in statuses if entry["phase"] == SyncPhase.synced.value)
    if total == 0 and phase is SyncPhase.synced:
        return "True", Reason.no_targets, "no sync targets: nothing to sync"
    counted = f"{synced} of {total} targets synced"
    if phase is SyncPhase.synced:
        return "True", Reason.synced, counted
    if phase is SyncPhase.failed:
        return "False", Reason.sync_failed, counted
    return "False", Reason.sync_pending, counted


def condition(
    previous: Sequence[Mapping[str, Any]],
    kind: ConditionType,
    status: str,
    reason: Reason,
    message: str,
    *,
    generation: int,
    now: datetime,
) -> dict[str, Any]:
    """A condition whose lastTransitionTime moves only when its status changes."""
    before = next((entry for entry in previous if entry.get("type") == kind.value), None)
    since = rfc3339(now)
    if before is not None and before.get("status") == status:
        since = str(before.get("lastTransitionTime") or since)
    return {
        "type": kind.value,
        "status": status,
        "reason": reason.value,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": generation,
    }


def initial_conditions(generation: int, now: datetime) -> list[dict[str, Any]]:
    return reconciling_conditions([], generation, now)


def reconciling_conditions(
    previous: Sequence[Mapping[str, Any]], generation: int, now: datetime
) -> list[dict[str, Any]]:
    """After a change of desired state: Ready is False until the reconciler catches up."""
    path = next(
        (dict(entry) for entry in previous if entry.get("type") == "SecretPathResolved"),
        None,
    )
    return [
        condition(
            previous,
            ConditionType.ready,
            "False",
            Reason.reconciling,
            "waiting for the sync controller",
            generation=generation,
            now=now,
        ),
        path
        or condition(
            previous,
            ConditionType.secret_path_resolved,
            "Unknown",
            Reason.reconciling,
            "not checked yet",
            generation=generation,
            now=now,
        ),
    ]
