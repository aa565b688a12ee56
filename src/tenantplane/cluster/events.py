"""The platform events of a cluster's status (docs/events.md): what a status write observed
changing, derived from the row as it was and the status written (pure functions).

- ``cluster.phase_changed`` ``{from, to}`` (``reason`` too when the cluster Failed): every
  change of phase, the request path's (Terminating) and the reconciler's (Provisioning,
  Running, Upgrading, Failed, and Deleted once the row is gone). Creating a cluster is its
  audit event (``cluster.create``); the first phase change is the reconciler's first look
  (Pending to Provisioning).
- ``cluster.ha_phase_changed`` ``{from, to}``: the HA phase of an HA cluster (pending,
  ha-healthy, ha-degraded, ha-unavailable), except while it is being deleted.
- ``cluster.upgrade_started`` ``{from, to}`` (Kubernetes versions, ``v1.33.5``): the cluster
  entered Upgrading with another version than it runs desired; ``cluster.upgrade_completed``
  ``{from, to}``: the version it runs changed; ``cluster.upgrade_failed`` ``{from, to,
  reason}``: it Failed while an upgrade was under way. An upgrade that started and completed
  between two looks is both started and completed at once.
"""

from __future__ import annotations

from typing import Any

from tenantplane.cluster.models import Cluster, ClusterPhase
from tenantplane.event.log import Draft, platform_event

KIND = "cluster"
_UPGRADING = ClusterPhase.upgrading.value
_FAILED = ClusterPhase.failed.value
_TERMINATING = ClusterPhase.terminating.value


def phase_changed(name: str, before: str, after: str, reason: str = "") -> Draft:
    data: dict[str, Any] = {"from": before, "to": after}
    if after == _FAILED:
        data["reason"] = reason
    return platform_event("cluster.phase_changed", KIND, name, **data)


def status_events(
    cluster: Cluster, status: dict[str, Any], desired_version: str, reason: str
) -> list[Draft]:
    """What writing ``status`` over ``cluster`` (the row as read under its lease) changes:
    ``desired_version`` is the Kubernetes version of the spec acted on, ``reason`` the
    orchestrator's message (why it failed, when it did)."""
    name = cluster.name
    before, after = cluster.phase, status["phase"]
    events = []
    if after != before:
        events.append(phase_changed(name, before, after, reason))
    # A cluster being torn down loses its replicas: that is no news of its availability.
    if status["ha_phase"] != cluster.ha_phase and after != _TERMINATING:
        events.append(
            platform_event(
                "cluster.ha_phase_changed",
                KIND,
                name,
                **{"from": cluster.ha_phase, "to": status["ha_phase"]},
            )
        )
    running, now_running = cluster.kubernetes_version, status["kubernetes_version"]
    versions = {"from": running, "to": desired_version}
    # Serving a version, and another one desired.
    upgrade_due = bool(running) and running != desired_version
    if after == _UPGRADING and before != _UPGRADING and upgrade_due:
        events.append(platform_event("cluster.upgrade_started", KIND, name, **versions))
    if running and now_running != running:
        if before not in (_UPGRADING, _FAILED) and after != _UPGRADING:
            # Started and done between two looks: its start was never seen.
            started = {"from": running, "to": now_running}
            events.append(platform_event("cluster.upgrade_started", KIND, name, **started))
        done = {"from": running, "to": now_running}
        events.append(platform_event("cluster.upgrade_completed", KIND, name, **done))
    elif after == _FAILED and before in (_UPGRADING, ClusterPhase.running.value) and upgrade_due:
        events.append(
            platform_event("cluster.upgrade_failed", KIND, name, **versions, reason=reason)
        )
    return events
