from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.emails import InvalidEmail, normalise_email
from tenantplane.http.errors import Conflict, Forbidden, NotFound, ValidationFailed
from tenantplane.http.names import is_dns_label
from tenantplane.member.models import Member, Role
from tenantplane.providers.orchestrator import TENANT_NAME_MAX_LENGTH
from tenantplane.tenant.models import Plan, Tenant, TenantState
from tenantplane.tenant.repository import TenantRepository
from tenantplane.tenant.schemas import TenantUpdate


class TenantSuspended(Forbidden):
    def __init__(self) -> None:
        super().__init__(
            "the tenant is suspended and read-only: writes are refused until the platform "
            "operator resumes it or the overdue payment is settled",
            code="TENANT_SUSPENDED",
        )


class TenantCancelled(Forbidden):
    def __init__(self) -> None:
        super().__init__(
            "the tenant is cancelled and read-only: its invoices and other data stay readable",
            code="TENANT_CANCELLED",
        )


REFUSALS: dict[TenantState, type[TenantSuspended | TenantCancelled]] = {
    TenantState.suspended: TenantSuspended,
    TenantState.cancelled: TenantCancelled,
}


async def check_writable(
    session: AsyncSession, tenant_id: int, allowed: frozenset[TenantState] = frozenset()
) -> None:
    """Refuse a write of a tenant that is not active (403 TENANT_SUSPENDED or
    TENANT_CANCELLED), unless the operation declares it harmless in that state."""
    state = await TenantRepository.from_session(session).state_for_write(tenant_id)
    refusal = REFUSALS.get(state) if state is not None else None
    if refusal is not None and state not in allowed:
        raise refusal()


async def get_by_name(session: AsyncSession, name: str) -> Tenant:
    """A tenant by name, for operators (404 ``tenant NAME not found`` when there is none)."""
    tenant = await TenantRepository.from_session(session).get_by_name(name)
    if tenant is None:
        raise NotFound(f"tenant {name}")
    return tenant


async def get(session: AsyncSession, tenant_id: int) -> Tenant:
    tenant = await TenantRepository.from_session(session).get(tenant_id)
    if tenant is None:
        raise NotFound("tenant")
    return tenant


def reject_tenant_update(update: TenantUpdate) -> NoReturn:
    """Tenants cannot change their platform-managed fields, and there is nothing else."""
    for name in sorted(update.model_fields_set):
        alias = TenantUpdate.model_fields[name].alias or name
        raise Forbidden(
            f"{alias} is platform-managed and cannot be changed through the API",
            code="PLATFORM_MANAGED_FIELD",
            field=alias,
        )
    raise ValidationFailed(
        "the request names no updatable field", field=None, code="NO_UPDATABLE_FIELDS"
    )


async def create(session: AsyncSession, name: str, plan: Plan, admin_email: str | None) -> Tenant:
    if not is_dns_label(name, min_length=2) or len(name) > TENANT_NAME_MAX_LENGTH:
        # Its clusters live in the namespace tp-<tenant>, a DNS label (docs/api.md, "Names").
        raise ValidationFailed(
            f"tenant name must be DNS-safe, 2-{TENANT_NAME_MAX_LENGTH} characters",
            field="name",
        )
    repository = TenantRepository.from_session(session)
    if await repository.get_by_name(name) is not None:
        raise Conflict(f"tenant {name} already exists")
    tenant = Tenant(name=name, plan=plan)
    repository.add(tenant)
    try:
        await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"tenant {name} already exists") from exc
    if admin_email:
        try:
            email = normalise_email(admin_email)
        except InvalidEmail as exc:
            raise ValidationFailed(str(exc), field="adminEmail") from None
        session.add(Member(tenant_id=tenant.id, email=email, role=Role.admin))
        await session.flush()
    return tenant


async def update_platform_fields(
    session: AsyncSession,
    name: str,
    plan: Plan | None,
    enforce_metrics_limit: bool | None,
    enforce_log_limit: bool | None,
) -> Tenant:
    tenant = await get_by_name(session, name)
    if plan is not None:
        tenant.plan = plan
    if enforce_metrics_limit is not None:
        tenant.enforce_metrics_limit = enforce_metrics_limit
    if enforce_log_limit is not None:
        tenant.enforce_log_limit = enforce_log_limit
    await session.flush()
    return tenant


async def list_all(session: AsyncSession) -> Sequence[Tenant]:
    return await TenantRepository.from_session(session).list()
