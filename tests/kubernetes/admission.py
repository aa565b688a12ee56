"""Admission on the bed's API server, to hold the controllers in a state they pass through
too quickly to observe on demand: a ReplicaSet that cannot replace a deleted pod."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from lightkube import ApiError, Client
from lightkube.models.admissionregistration_v1 import (
    MatchResources,
    NamedRuleWithOperations,
    ValidatingAdmissionPolicyBindingSpec,
    ValidatingAdmissionPolicySpec,
    Validation,
)
from lightkube.models.core_v1 import Container, PodSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.admissionregistration_v1 import (
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
)
from lightkube.resources.apps_v1 import Deployment, StatefulSet
from lightkube.resources.core_v1 import Pod

REFUSAL = "held by the test"
DEADLINE = 60.0


@asynccontextmanager
async def no_new_pods(kube: Client, namespace: str, **labels: str) -> AsyncIterator[None]:
    """The API server refuses to create pods so labelled in the namespace (a
    ValidatingAdmissionPolicy): a ReplicaSet cannot replace a deleted pod while it holds."""
    name = f"hold-{namespace}"
    kube.create(
        ValidatingAdmissionPolicy(
            metadata=ObjectMeta(name=name),
            spec=ValidatingAdmissionPolicySpec(
                failurePolicy="Fail",
                matchConstraints=MatchResources(
                    resourceRules=[
                        NamedRuleWithOperations(
                            apiGroups=[""],
                            apiVersions=["v1"],
                            operations=["CREATE"],
                            resources=["pods"],
                        )
                    ]
                ),
                validations=[Validation(expression="false", message=REFUSAL)],
            ),
        )
    )
    kube.create(
        ValidatingAdmissionPolicyBinding(
            metadata=ObjectMeta(name=name),
            spec=ValidatingAdmissionPolicyBindingSpec(
                policyName=name,
                validationActions=["Deny"],
                matchResources=MatchResources(
                    namespaceSelector=LabelSelector(
                        matchLabels={"kubernetes.io/metadata.name": namespace}
                    ),
                    objectSelector=LabelSelector(matchLabels=labels),
                ),
            ),
        )
    )
    try:
        # The API server takes policies up from its informer: held once a dry run is refused.
        probe = Pod(
            metadata=ObjectMeta(generateName="probe-", namespace=namespace, labels=labels),
            spec=PodSpec(containers=[Container(name="probe", image="probe")]),
        )
        for _ in range(int(DEADLINE / 0.2)):
            try:
                kube.create(probe, dry_run=True)
            except ApiError as refused:
                if REFUSAL not in (refused.status.message or ""):
                    raise  # refused for another reason: the probe itself is wrong
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the admission policy never took effect")
        yield
    finally:
        kube.delete(ValidatingAdmissionPolicyBinding, name)
        kube.delete(ValidatingAdmissionPolicy, name)


async def held(
    kube: Client,
    workload: type[Deployment | StatefulSet],
    name: str,
    namespace: str,
    state: Callable[[Any], bool],
) -> None:
    """Until the workload's controller has observed its spec and reports ``state`` (of its
    status and spec), which the policy then holds."""
    for _ in range(int(DEADLINE / 0.2)):
        current = kube.get(workload, name, namespace=namespace)
        assert current.metadata is not None
        assert current.status is not None
        if current.status.observedGeneration == current.metadata.generation and state(current):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"{name}: never reached the state held: {current.status}")


def pod_short(workload: Any) -> bool:
    """Fewer pods than wanted: one deleted, its replacement refused."""
    return bool((workload.status.replicas or 0) < (workload.spec.replicas or 1))


def rollout_stuck(workload: Any) -> bool:
    """Pods of an older template still counted: a rollout whose new pods are refused."""
    return bool((workload.status.updatedReplicas or 0) < (workload.status.replicas or 0))
