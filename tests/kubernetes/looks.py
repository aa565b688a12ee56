"""The orchestrator called on the bed as the reconciler calls it: again and again, a second
apart, until the cluster reaches a stage (a deadline turns a hang into a failure)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import pytest

from tenantplane.providers.orchestrator import ClusterSpec, Observation, Stage
from tenantplane.providers.orchestrator.kubernetes import ChartSettings, KubernetesOrchestrator
from tenantplane.reconcile.fence import UNFENCED

# The starter plan's pool: the tenant namespace's quota.
POOL = {"cpu": "8", "memory": "16Gi", "storage": "200Gi"}
LOOK_SECONDS = 1.0
DEADLINE = 240.0


def chart(repository: str) -> ChartSettings:
    """The chart the platform pins, from ``repository`` (the bed's, or a fake's)."""
    return ChartSettings(
        repository=repository, version="0.30.0", host_template="{cluster}.{tenant}.test"
    )


def cluster_spec(
    name: str = "dev",
    *,
    tenant: str | None = None,
    high_availability: bool = False,
    cpu: str = "1",
    memory: str = "2Gi",
    storage: str = "10Gi",
) -> ClusterSpec:
    """A cluster of a tenant of its own (a namespace no other test uses)."""
    return ClusterSpec(
        uid=uuid.uuid4().hex,
        name=name,
        tenant=tenant or f"t{uuid.uuid4().hex[:8]}",
        version="1.34",
        patch=1,
        high_availability=high_availability,
        cpu=cpu,
        memory=memory,
        storage=storage,
        pool=POOL,
    )


async def until(
    orchestrator: KubernetesOrchestrator, spec: ClusterSpec, stage: str
) -> list[Observation]:
    """Apply until ``stage``: the observations on the way."""
    seen: list[Observation] = []
    for _ in range(int(DEADLINE / LOOK_SECONDS)):
        seen.append(await orchestrator.apply(spec, UNFENCED))
        if seen[-1].stage == stage:
            return seen
        await asyncio.sleep(LOOK_SECONDS)
    pytest.fail(f"never {stage}; last: {seen[-1]}")


async def settled(
    orchestrator: KubernetesOrchestrator,
    spec: ClusterSpec,
    step: Callable[[], Awaitable[None]] | None = None,
) -> Observation:
    """Apply until the release is done and every replica ready; between two looks, a
    second passes (on the bed) or ``step`` moves the fake's controllers."""
    for _ in range(int(DEADLINE / LOOK_SECONDS)):
        observed = await orchestrator.apply(spec, UNFENCED)
        if observed.settled:
            return observed
        await (step() if step is not None else asyncio.sleep(LOOK_SECONDS))
    pytest.fail(f"{spec.name} never settled; last: {observed}")


async def deleted(orchestrator: KubernetesOrchestrator, spec: ClusterSpec) -> None:
    for _ in range(int(DEADLINE / LOOK_SECONDS)):
        if (await orchestrator.delete(spec, UNFENCED)).stage == Stage.gone:
            return
        await asyncio.sleep(LOOK_SECONDS)
    pytest.fail(f"{spec.name} not deleted")
