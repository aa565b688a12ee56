"""When a cluster being waited for has arrived (pure functions over ``ClusterRead``).

``phase`` Running alone does not say a change has been applied: a cluster keeps answering
Running after a PATCH of its version until the reconciler starts the upgrade. So a wait
for a change also needs the reconciler to have acted on it and, at Running, the
``VersionUpToDate`` condition True (docs/clusters.md#phases-and-status).

The API shows ``status.observedGeneration`` (the spec generation the reconciler last acted
on) but not the generation itself. The answer to an effective change was built before any
reconciler could act on it, so the change's generation is at least that answer's
``observedGeneration`` + 1: the wait asks for that.
"""

from __future__ import annotations

from typing import Any

from tenantplane_client import models as m

VERSION_UP_TO_DATE = "VersionUpToDate"


def condition(cluster: m.ClusterRead, kind: str) -> dict[str, Any] | None:
    for entry in cluster.status.conditions:
        if entry.get("type") == kind:
            return entry
    return None


def version_up_to_date(cluster: m.ClusterRead) -> bool:
    """The condition is True (a server that does not report it is taken at its phase)."""
    entry = condition(cluster, VERSION_UP_TO_DATE)
    return entry is None or entry.get("status") == "True"


def least_generation(changed: m.ClusterRead | None) -> int:
    """The least generation an effective change answered by ``changed`` can have."""
    return 0 if changed is None else changed.status.observed_generation + 1


def arrived(cluster: m.ClusterRead, phase: str, generation: int) -> bool:
    status = cluster.status
    if status.phase != phase or status.observed_generation < generation:
        return False
    if phase != "Running":
        return True
    ha_ready = not cluster.high_availability or status.ha_configured
    return ha_ready and version_up_to_date(cluster)


def progress_state(cluster: m.ClusterRead) -> tuple[Any, ...]:
    """What a progress report shows; a report is made each time it changes."""
    status = cluster.status
    version = condition(cluster, VERSION_UP_TO_DATE) or {}
    return (
        status.phase,
        status.observed_generation,
        version.get("reason"),
        status.ha_phase,
        status.ha_replicas_ready,
        status.ha_etcd_replicas_ready,
    )
