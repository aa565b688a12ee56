from __future__ import annotations

from typing import Annotated

from fastapi import Request, Response, status

from tenantplane.access import TenantAdmin, TenantMember
from tenantplane.db.session import SessionDep
from tenantplane.http.errors import error_responses
from tenantplane.http.etag import NOT_MODIFIED, IfMatch, set_etag
from tenantplane.http.location import set_location
from tenantplane.http.names import resource_name_path
from tenantplane.http.paging import Paging
from tenantplane.http.routers import PrefixedRouter
from tenantplane.http.schemas import PagedList
from tenantplane.idempotency.dependency import IDEMPOTENCY_RESPONSES, CapturingRoute, Idempotent
from tenantplane.secret import service
from tenantplane.secret.schemas import SecretCreate, SecretRead, SecretUpdate

SecretName = Annotated[str, resource_name_path("Secret name")]

router = PrefixedRouter(
    prefix="/tenants/{tenant}/secrets", tags=["secrets"], route_class=CapturingRoute
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={**error_responses(409), **IDEMPOTENCY_RESPONSES},
)
async def create_secret(
    principal: TenantAdmin,
    _: Idempotent,
    body: SecretCreate,
    session: SessionDep,
    request: Request,
    response: Response,
) -> SecretRead:
    """Create a managed secret.

    It points at a path in the tenant's vault and may name sync targets. Admin.
    """
    secret = await service.create(session, principal.tenant_id, body)
    set_etag(response, secret.resource_version)
    set_location(request, response, secret.name)
    return SecretRead.of(secret)


@router.get("")
async def list_secrets(
    principal: TenantMember, session: SessionDep, paging: Paging
) -> PagedList[SecretRead]:
    """List the tenant's managed secrets.

    Metadata and sync configuration, never values; by name, paged with `limit` and
    `continue`. Members.
    """
    page = paging.page("secrets", principal.tenant_id)
    secrets, last = await service.list_secrets(session, principal.tenant_id, page)
    return PagedList[SecretRead](
        items=[SecretRead.of(secret) for secret in secrets],
        continue_=paging.next_token("secrets", principal.tenant_id, last),
    )


@router.get("/{name}", responses={**error_responses(404), **NOT_MODIFIED})
async def get_secret(
    principal: TenantMember, name: SecretName, session: SessionDep, response: Response
) -> SecretRead:
    """Read one managed secret.

    Includes its sync status. Members.
    """
    secret = await service.get(session, principal.tenant_id, name)
    set_etag(response, secret.resource_version)
    return SecretRead.of(secret)


@router.patch("/{name}", responses=error_responses(404, 412))
async def patch_secret(
    principal: TenantAdmin,
    name: SecretName,
    body: SecretUpdate,
    session: SessionDep,
    response: Response,
    if_match: IfMatch = None,
) -> SecretRead:
    """Replace a secret's sync targets.

    The list fully replaces the existing one; an empty list removes all targets. Admin.
    """
    secret = await service.replace_targets(session, principal.tenant_id, name, body.sync, if_match)
    set_etag(response, secret.resource_version)
    return SecretRead.of(secret)


@router.delete(
    "/{name}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 412)
)
async def delete_secret(
    principal: TenantAdmin, name: SecretName, session: SessionDep, if_match: IfMatch = None
) -> None:
    """Delete a managed secret.

    Its copies are removed from the clusters it was synced into; the vault is untouched. Admin.
    """
    await service.delete(session, principal.tenant_id, name, if_match)
