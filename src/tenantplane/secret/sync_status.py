"""The status a pass over a secret writes: its conditions, the failure its vault path
means for every target, and the platform events of targets that failed or recovered."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tenantplane.event.log import Draft, platform_event
from tenantplane.providers.vault import PathCheck, PathStatus
from tenantplane.secret.models import SyncPhase
from tenantplane.secret.status import ConditionType, Reason, condition, ready_condition, target_key
from tenantplane.secret.sync_view import SecretView, SyncOutcome


def target_events(snapshot: SecretView, statuses: list[dict[str, Any]]) -> list[Draft]:
    """The targets that failed (from Synced or Pending: ``secret.sync_failed`` with the
    reason and message) or recovered (from Failed to Synced: ``secret.sync_recovered``) in
    ``statuses`` against the row's last ones. A target that stays Failed, or goes from Failed
    to Pending, records nothing (its recovery is when it is Synced again)."""
    before = {target_key(entry): entry.get("phase") for entry in snapshot.statuses}
    failed, synced = SyncPhase.failed.value, SyncPhase.synced.value
    events = []
    for entry in statuses:
        was, now = before.get(target_key(entry)), entry["phase"]
        target = {
            "cluster": entry["cluster"],
            "namespace": entry["namespace"],
            "secretName": entry["secretName"],
        }
        if now == failed and was != failed:
            data = {**target, "reason": entry["reason"], "message": entry["message"]}
            events.append(platform_event("secret.sync_failed", "secret", snapshot.name, **data))
        elif now == synced and was == failed:
            events.append(
                platform_event("secret.sync_recovered", "secret", snapshot.name, **target)
            )
    return events


def path_failure(path: PathCheck | None) -> tuple[SyncPhase, Reason, str] | None:
    if path is None:
        return None
    if path.status in {PathStatus.not_found, PathStatus.version_deleted}:
        return SyncPhase.failed, Reason.secret_path_not_found, path.message
    if path.status is PathStatus.denied:
        return SyncPhase.failed, Reason.vault_access_denied, path.message
    if path.status is PathStatus.unavailable:
        return SyncPhase.pending, Reason.vault_unavailable, path.message
    return None


_PATH_CONDITION: dict[PathStatus, tuple[str, Reason]] = {
    PathStatus.found: ("True", Reason.found),
    PathStatus.not_found: ("False", Reason.secret_path_not_found),
    PathStatus.version_deleted: ("False", Reason.secret_path_not_found),
    PathStatus.denied: ("False", Reason.vault_access_denied),
    PathStatus.unavailable: ("Unknown", Reason.vault_unavailable),
    PathStatus.not_checked: ("Unknown", Reason.not_checked),
}


def sync_conditions(
    snapshot: SecretView, outcome: SyncOutcome, phase: SyncPhase, now: datetime
) -> list[dict[str, Any]]:
    status, reason, message = ready_condition(outcome.statuses, phase, observed=True)
    if outcome.removals_pending:
        message = f"{message}; {outcome.removals_pending} removed copies still to delete"
    ready = condition(
        snapshot.conditions,
        ConditionType.ready,
        status,
        reason,
        message,
        generation=snapshot.generation,
        now=now,
    )
    assert outcome.path is not None
    path_status, path_reason = _PATH_CONDITION[outcome.path.status]
    resolved = condition(
        snapshot.conditions,
        ConditionType.secret_path_resolved,
        path_status,
        path_reason,
        outcome.path.message,
        generation=snapshot.generation,
        now=now,
    )
    return [ready, resolved]


def without_times(conditions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {key: value for key, value in entry.items() if key != "lastTransitionTime"}
        for entry in conditions
    ]
