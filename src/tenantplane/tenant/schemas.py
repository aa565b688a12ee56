from __future__ import annotations

from pydantic import JsonValue

from tenantplane.http.schemas import InputModel, OutputModel
from tenantplane.tenant.models import Plan, Tenant

PLATFORM_MANAGED_FIELDS = ("plan", "enforceMetricsLimit", "enforceLogLimit")


class TenantRead(OutputModel):
    name: str
    plan: Plan
    enforce_metrics_limit: bool
    enforce_log_limit: bool

    @classmethod
    def of(cls, tenant: Tenant) -> TenantRead:
        return cls(
            name=tenant.name,
            plan=tenant.plan,
            enforce_metrics_limit=tenant.enforce_metrics_limit,
            enforce_log_limit=tenant.enforce_log_limit,
        )


class TenantUpdate(InputModel):
    """The tenant fields a request may name. All are platform-managed today, so any value
    (valid or not) is refused with 403 rather than validated."""

    plan: JsonValue = None
    enforce_metrics_limit: JsonValue = None
    enforce_log_limit: JsonValue = None
