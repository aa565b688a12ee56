"""From what the orchestrator observed to the cluster's status (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tenantplane.cluster.models import Cluster, ClusterPhase, HaPhase
from tenantplane.db.base import rfc3339
from tenantplane.providers.orchestrator import Observation, Stage

HA_REPLICAS = 3
_PHASE_OF_STAGE = {
    Stage.creating: ClusterPhase.provisioning,
    Stage.ready: ClusterPhase.running,
    Stage.upgrading: ClusterPhase.upgrading,
    Stage.failed: ClusterPhase.failed,
}


@dataclass(frozen=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str


def phase_of(cluster: Cluster, observation: Observation) -> str:
    if cluster.is_terminating:
        return ClusterPhase.terminating.value
    phase = _PHASE_OF_STAGE.get(observation.stage)
    return phase.value if phase is not None else cluster.phase


def ha_phase_of(high_availability: bool, configured: bool, observation: Observation) -> str:
    if not high_availability:
        return HaPhase.none.value
    if not configured:
        return HaPhase.pending.value
    if observation.control_plane.ready >= HA_REPLICAS and observation.etcd.ready >= HA_REPLICAS:
        return HaPhase.healthy.value
    if observation.api_available:
        return HaPhase.degraded.value
    return HaPhase.unavailable.value


def running_version(cluster: Cluster, observation: Observation) -> str:
    """The Kubernetes version serving: what the orchestrator reports, or, while an upgrade
    rolls (the Kubernetes orchestrator reports none then), what ran before."""
    serving = observation.stage in (Stage.ready, Stage.upgrading)
    if serving and observation.kubernetes_version:
        return observation.kubernetes_version
    return cluster.kubernetes_version


def _version_condition(cluster: Cluster, phase: str, observation: Observation) -> Condition:
    serving = observation.stage in (Stage.ready, Stage.upgrading)
    up_to_date = (
        serving and observation.version == cluster.version and phase != ClusterPhase.upgrading
    )
    if phase == ClusterPhase.upgrading:
        reason = "UpgradeInProgress"
    elif serving and not up_to_date:
        reason = "UpgradePending"  # desired, not yet started by the orchestrator
    else:
        reason = "Observed"
    running = running_version(cluster, observation) or "nothing yet"
    return Condition(
        "VersionUpToDate", up_to_date, reason, f"running {running}, desired {cluster.version}"
    )


def upgrade_requested(cluster: Cluster, now: datetime) -> list[dict[str, Any]]:
    """The conditions to show as soon as a new version is desired (before any reconcile):
    VersionUpToDate False, UpgradePending, naming what runs and what is wanted."""
    pending = Condition(
        "VersionUpToDate",
        False,
        "UpgradePending",
        f"running {cluster.kubernetes_version or 'nothing yet'}, desired {cluster.version}",
    )
    [rendered] = render_conditions(cluster.conditions, [pending], now)
    # Replaced where it stands, so that the order of conditions never moves.
    replaced = [
        rendered if entry.get("type") == pending.type else entry for entry in cluster.conditions
    ]
    return replaced if rendered in replaced else [*replaced, rendered]


def _conditions(
    cluster: Cluster, phase: str, ha_phase: str, observation: Observation
) -> list[Condition]:
    serving = observation.stage in (Stage.ready, Stage.upgrading)
    available = serving and observation.api_available
    ready = available and phase in (ClusterPhase.running, ClusterPhase.upgrading)
    conditions = [
        Condition(
            "Ready",
            ready,
            phase if (ready or phase != ClusterPhase.running) else "ControlPlaneUnavailable",
            observation.message,
        ),
        Condition(
            "ControlPlaneAvailable",
            available,
            "QuorumReady" if available else "QuorumNotReady",
            observation.message,
        ),
        _version_condition(cluster, phase, observation),
    ]
    if cluster.high_availability:
        reasons = {
            HaPhase.pending.value: "HAPending",
            HaPhase.healthy.value: "HAHealthy",
            HaPhase.degraded.value: "HADegraded",
            HaPhase.unavailable.value: "HAUnavailable",
        }
        conditions.append(
            Condition(
                "HighAvailability",
                ha_phase == HaPhase.healthy.value,
                reasons[ha_phase],
                observation.message,
            )
        )
    return conditions


def render_conditions(
    previous: list[dict[str, Any]], conditions: list[Condition], now: datetime
) -> list[dict[str, Any]]:
    """Kubernetes-style conditions; lastTransitionTime moves only when status flips."""
    before = {entry.get("type"): entry for entry in previous}
    rendered = []
    for condition in conditions:
        status = "True" if condition.status else "False"
        old = before.get(condition.type)
        changed_at = (
            old["lastTransitionTime"]
            if old is not None and old.get("status") == status and "lastTransitionTime" in old
            else rfc3339(now)
        )
        rendered.append(
            {
                "type": condition.type,
                "status": status,
                "reason": condition.reason,
                "message": condition.message,
                "lastTransitionTime": changed_at,
            }
        )
    return rendered


def observed_status(cluster: Cluster, observation: Observation, now: datetime) -> dict[str, Any]:
    """The status columns to write for ``observation`` (only those that changed matter)."""
    ha = cluster.high_availability
    phase = phase_of(cluster, observation)
    serving = observation.stage in (Stage.ready, Stage.upgrading)
    control_plane = observation.control_plane.ready if ha else 0
    etcd = observation.etcd.ready if ha else 0
    first_time_healthy = ha and control_plane >= HA_REPLICAS and etcd >= HA_REPLICAS
    configured = cluster.ha_configured or first_time_healthy
    ha_phase = ha_phase_of(ha, configured, observation)
    return {
        "phase": phase,
        "endpoint": observation.endpoint if serving else cluster.endpoint,
        "certificate_authority": (
            observation.certificate_authority if serving else cluster.certificate_authority
        ),
        "kubernetes_version": running_version(cluster, observation),
        "conditions": render_conditions(
            cluster.conditions, _conditions(cluster, phase, ha_phase, observation), now
        ),
        "metrics": observation.metrics,
        "ha_configured": configured,
        # Set once, the first time both reach 3/3; never changed or cleared.
        "ha_enabled_at": cluster.ha_enabled_at or (now if configured else None),
        "ha_phase": ha_phase,
        "ha_replicas_ready": control_plane,
        "ha_etcd_replicas_ready": etcd,
    }
