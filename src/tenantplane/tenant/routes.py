from __future__ import annotations

from fastapi import Response

from tenantplane.access import TenantAdmin, TenantMember
from tenantplane.db.session import SessionDep
from tenantplane.http.etag import NOT_MODIFIED, set_etag
from tenantplane.http.routers import PrefixedRouter
from tenantplane.tenant import service
from tenantplane.tenant.schemas import TenantRead, TenantUpdate

router = PrefixedRouter(prefix="/tenants/{tenant}", tags=["tenant"])


@router.get("", response_model=TenantRead, responses=NOT_MODIFIED)
async def get_tenant(
    principal: TenantMember, session: SessionDep, response: Response
) -> TenantRead:
    """Read the tenant.

    The tenant's platform-managed fields (plan, enforcement flags). Members.
    """
    tenant = await service.get(session, principal.tenant_id)
    set_etag(response, tenant.resource_version)
    return TenantRead.of(tenant)


@router.patch("", response_model=TenantRead)
async def patch_tenant(principal: TenantAdmin, update: TenantUpdate) -> TenantRead:
    """Change the tenant (refused).

    Every tenant field is platform-managed: naming one is a 403, naming none a 400. Admin.
    """
    service.reject_tenant_update(update)
