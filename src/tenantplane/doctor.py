"""`tenantplane doctor`: stored names that today's rules refuse.

Rules were tightened after rows were written with them: names ending in a newline or another
control character passed the DNS-name checks (Python's ``$`` matches before a final newline),
and cluster and tenant names longer than their Kubernetes objects allow were accepted. Such
rows are left as they are (renaming a cluster or a secret would change what tenants address and
what runs), and keep working where they can; this report names each one, so that the operator
can have it replaced (a new cluster or secret of a valid name, the old one deleted).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cluster.repository import ClusterRepository
from tenantplane.http.names import check_resource_name, is_dns_label
from tenantplane.providers.orchestrator import unrepresentable
from tenantplane.secret.repository import SecretRepository
from tenantplane.secret.schemas import check_namespace, check_object_name, check_secret_path
from tenantplane.tenant import service as tenant_service
from tenantplane.tenant.models import Tenant


@dataclass(frozen=True)
class Finding:
    kind: str  # tenant, cluster or secret
    tenant: str
    name: str
    field: str
    problem: str


def _problem(check: Callable[[str], object], value: str) -> str | None:
    try:
        check(value)
    except ValueError as exc:
        return str(exc)
    return None


def _tenant_name(value: str) -> str:
    if not is_dns_label(value, min_length=2):
        raise ValueError("must be DNS-safe: 2-63 lower-case letters, digits or '-'")
    return value


async def diagnose(session: AsyncSession) -> list[Finding]:
    findings: list[Finding] = []
    for tenant in await tenant_service.list_all(session):
        if (problem := _problem(_tenant_name, tenant.name)) is not None:
            findings.append(Finding("tenant", tenant.name, tenant.name, "name", problem))
        findings += await _clusters(session, tenant)
        findings += await _secrets(session, tenant)
    return findings


async def _clusters(session: AsyncSession, tenant: Tenant) -> list[Finding]:
    found: list[Finding] = []
    for cluster in await ClusterRepository.from_session(session).list(tenant.id):
        problem = _problem(check_resource_name, cluster.name) or unrepresentable(
            cluster.name, tenant.name
        )
        if problem is not None:
            found.append(Finding("cluster", tenant.name, cluster.name, "name", problem))
    return found


async def _secrets(session: AsyncSession, tenant: Tenant) -> list[Finding]:
    found: list[Finding] = []
    for secret in await SecretRepository.from_session(session).list(tenant.id):
        values = [("name", check_resource_name, secret.name)]
        values.append(("secretPath", check_secret_path, secret.secret_path))
        for index, target in enumerate(secret.sync or []):
            values.append((f"sync[{index}].cluster", check_resource_name, target["cluster"]))
            values.append((f"sync[{index}].namespace", check_namespace, target["namespace"]))
            if target.get("secretName"):
                values.append(
                    (f"sync[{index}].secretName", check_object_name, target["secretName"])
                )
        for field, check, value in values:
            if (problem := _problem(check, value)) is not None:
                found.append(Finding("secret", tenant.name, secret.name, field, problem))
    return found
