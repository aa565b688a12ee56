from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, StrictBool, ValidationInfo, field_validator

from tenantplane.cluster.models import Cluster
from tenantplane.cluster.quantity import BYTE_UNIT, CPU_UNIT, QuantityError, positive_amount
from tenantplane.db.base import rfc3339
from tenantplane.db.reads import ReadRow
from tenantplane.http.names import RESOURCE_NAME_SCHEMA, check_resource_name
from tenantplane.http.schemas import Continue, InputModel, OutputModel, UtcDateTime
from tenantplane.http.text import DisplayText
from tenantplane.providers.orchestrator import CLUSTER_NAME_MAX_LENGTH


def _within_kubernetes_limit(value: str) -> str:
    # Longer names make Kubernetes objects of a cluster invalid (docs/api.md, "Names").
    if len(value) > CLUSTER_NAME_MAX_LENGTH:
        raise ValueError(
            f"must be at most {CLUSTER_NAME_MAX_LENGTH} characters: a cluster's name is part "
            "of the names and labels of its Kubernetes objects"
        )
    return value


ClusterName = Annotated[
    str,
    AfterValidator(check_resource_name),
    AfterValidator(_within_kubernetes_limit),
    Field(json_schema_extra={**RESOURCE_NAME_SCHEMA, "maxLength": CLUSTER_NAME_MAX_LENGTH}),
]


class ResourcesInput(InputModel):
    """cpu, memory, storage in Kubernetes quantity format; omitted ones take the defaults."""

    cpu: str | None = None
    memory: str | None = None
    storage: str | None = None

    @field_validator("cpu", "memory", "storage")
    @classmethod
    def _quantity(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Normalised in the unit the column holds (millicores for cpu), so that a value
        # that fits as bytes but not as millicores is refused here, not in the service.
        unit = CPU_UNIT if info.field_name == "cpu" else BYTE_UNIT
        if value is not None:
            try:
                positive_amount(value, unit)
            except QuantityError as exc:
                raise ValueError(str(exc)) from exc
        return value


class ClusterCreate(InputModel):
    name: ClusterName
    # Deprecated: accepted and ignored (always equal to name in responses), but still text
    # a person typed, so it follows the same character policy.
    display_name: DisplayText | None = None
    # Checked by the service, which answers CLUSTER_DEDICATED_UNSUPPORTED for dedicated;
    # the document names the one value accepted.
    type: Annotated[str, Field(json_schema_extra={"enum": ["shared"]})] = "shared"
    version: str | None = None
    high_availability: StrictBool = False
    resources: ResourcesInput | None = None
    alerts: dict[str, Any] | None = None


class ClusterUpdate(InputModel):
    """Every field optional; only those present are considered."""

    name: str | None = None
    display_name: DisplayText | None = None
    type: str | None = None
    version: str | None = None
    high_availability: StrictBool | None = None
    resources: ResourcesInput | None = None
    alerts: dict[str, Any] | None = None


class ApiWarning(OutputModel):
    """An advisory in a response; the shape of a structured error."""

    code: str
    field: str
    message: str
    severity: str = "warning"


class ResourcesRead(OutputModel):
    cpu: str
    memory: str
    storage: str


class ClusterStatusRead(OutputModel):
    # The spec generation the reconciler last acted on (as in Kubernetes): behind the
    # cluster's generation while a change is pending.
    observed_generation: int
    phase: str
    endpoint: str
    kubernetes_version: str
    conditions: list[dict[str, Any]]
    metrics: dict[str, Any]
    ha_configured: bool
    # Omitted (responses exclude None) until HA is first configured: not required.
    ha_enabled_at: UtcDateTime | None = None
    ha_phase: str
    ha_replicas_desired: int
    ha_replicas_ready: int
    ha_etcd_replicas_desired: int
    ha_etcd_replicas_ready: int


class ClusterRead(OutputModel):
    name: str
    display_name: str
    type: str
    version: str
    high_availability: bool
    resources: ResourcesRead
    alerts: dict[str, Any]
    created_at: UtcDateTime
    resource_version: str
    status: ClusterStatusRead
    warnings: list[ApiWarning] = Field(default_factory=list)

    @classmethod
    def of(cls, cluster: Cluster, warnings: list[ApiWarning] | None = None) -> ClusterRead:
        desired = 3 if cluster.high_availability else 0
        return cls(
            name=cluster.name,
            display_name=cluster.name,
            type=cluster.type,
            version=cluster.version,
            high_availability=cluster.high_availability,
            resources=ResourcesRead(
                cpu=cluster.cpu, memory=cluster.memory, storage=cluster.storage
            ),
            alerts=cluster.alerts,
            created_at=cluster.created_at,
            resource_version=str(cluster.resource_version),
            status=ClusterStatusRead(
                observed_generation=cluster.observed_generation,
                phase=cluster.phase,
                endpoint=cluster.endpoint,
                kubernetes_version=cluster.kubernetes_version,
                conditions=cluster.conditions,
                metrics=cluster.metrics,
                ha_configured=cluster.ha_configured,
                ha_enabled_at=cluster.ha_enabled_at,
                ha_phase=cluster.ha_phase,
                ha_replicas_desired=desired,
                ha_replicas_ready=cluster.ha_replicas_ready,
                ha_etcd_replicas_desired=desired,
                ha_etcd_replicas_ready=cluster.ha_etcd_replicas_ready,
            ),
            warnings=warnings or [],
        )


class ConnectionDetails(OutputModel):
    endpoint: str
    certificate_authority: str


class VersionRead(OutputModel):
    version: str
    kubernetes_version: str
    default: bool
    retiring: bool


class VersionList(OutputModel):
    default: str
    items: list[VersionRead]
    continue_: Continue = None


def cluster_document(cluster: ReadRow) -> dict[str, Any]:
    """``ClusterRead.of(...)`` as JSON, built straight from a listing's plain row (the same
    fields in the same order, ``haEnabledAt`` left out until set; the list item shape test
    compares them with the single GET)."""
    desired = 3 if cluster.high_availability else 0
    status: dict[str, Any] = {
        "observedGeneration": cluster.observed_generation,
        "phase": cluster.phase,
        "endpoint": cluster.endpoint,
        "kubernetesVersion": cluster.kubernetes_version,
        "conditions": cluster.conditions,
        "metrics": cluster.metrics,
        "haConfigured": cluster.ha_configured,
    }
    if cluster.ha_enabled_at is not None:
        status["haEnabledAt"] = rfc3339(cluster.ha_enabled_at)
    status.update(
        haPhase=cluster.ha_phase,
        haReplicasDesired=desired,
        haReplicasReady=cluster.ha_replicas_ready,
        haEtcdReplicasDesired=desired,
        haEtcdReplicasReady=cluster.ha_etcd_replicas_ready,
    )
    return {
        "name": cluster.name,
        "displayName": cluster.name,
        "type": cluster.type,
        "version": cluster.version,
        "highAvailability": cluster.high_availability,
        "resources": {"cpu": cluster.cpu, "memory": cluster.memory, "storage": cluster.storage},
        "alerts": cluster.alerts,
        "createdAt": rfc3339(cluster.created_at),
        "resourceVersion": str(cluster.resource_version),
        "status": status,
        "warnings": [],
    }
