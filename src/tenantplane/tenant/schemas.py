from __future__ import annotations

from pydantic import Field, JsonValue

from tenantplane.http.schemas import InputModel, OutputModel
from tenantplane.tenant.models import Plan, Tenant, TenantState

PLATFORM_MANAGED_FIELDS = ("plan", "enforceMetricsLimit", "enforceLogLimit", "state")


class TenantRead(OutputModel):
    name: str
    plan: Plan
    enforce_metrics_limit: bool
    enforce_log_limit: bool
    state: TenantState = Field(
        description="active; suspended (read-only until resumed); cancelled (read-only for "
        "good, resources withdrawn). Writes of a tenant that is not active are refused with "
        "403 TENANT_SUSPENDED or TENANT_CANCELLED."
    )

    @classmethod
    def of(cls, tenant: Tenant) -> TenantRead:
        return cls(
            name=tenant.name,
            plan=tenant.plan,
            enforce_metrics_limit=tenant.enforce_metrics_limit,
            enforce_log_limit=tenant.enforce_log_limit,
            state=tenant.state,
        )


class TenantUpdate(InputModel):
    """The tenant fields a request may name. All are platform-managed today, so any value
    (valid or not) is refused with 403 rather than validated."""

    plan: JsonValue = None
    enforce_metrics_limit: JsonValue = None
    enforce_log_limit: JsonValue = None
    state: JsonValue = None
