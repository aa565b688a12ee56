from __future__ import annotations

from fastapi import APIRouter, Response, status

from tenantplane.db.session import SessionDep
from tenantplane.http.auth import TenantAdmin, TenantMember
from tenantplane.http.errors import error_responses
from tenantplane.http.etag import IfMatch, set_etag
from tenantplane.http.schemas import ItemList
from tenantplane.secret import service
from tenantplane.secret.schemas import SecretCreate, SecretRead, SecretUpdate

router = APIRouter(prefix="/tenants/{tenant}/secrets", tags=["secrets"])


@router.post("", status_code=status.HTTP_201_CREATED, responses=error_responses(409))
async def create_secret(
    principal: TenantAdmin, body: SecretCreate, session: SessionDep, response: Response
) -> SecretRead:
    secret = await service.create(session, principal.tenant_id, body)
    set_etag(response, secret.resource_version)
    return SecretRead.of(secret)


@router.get("")
async def list_secrets(principal: TenantMember, session: SessionDep) -> ItemList[SecretRead]:
    secrets = await service.list_secrets(session, principal.tenant_id)
    return ItemList[SecretRead](items=[SecretRead.of(secret) for secret in secrets])


@router.get("/{name}", responses=error_responses(404))
async def get_secret(
    principal: TenantMember, name: str, session: SessionDep, response: Response
) -> SecretRead:
    secret = await service.get(session, principal.tenant_id, name)
    set_etag(response, secret.resource_version)
    return SecretRead.of(secret)


@router.patch("/{name}", responses=error_responses(404, 412))
async def patch_secret(
    principal: TenantAdmin,
    name: str,
    body: SecretUpdate,
    session: SessionDep,
    response: Response,
    if_match: IfMatch = None,
) -> SecretRead:
    secret = await service.replace_targets(session, principal.tenant_id, name, body.sync, if_match)
    set_etag(response, secret.resource_version)
    return SecretRead.of(secret)


@router.delete(
    "/{name}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 412)
)
async def delete_secret(
    principal: TenantAdmin, name: str, session: SessionDep, if_match: IfMatch = None
) -> None:
    await service.delete(session, principal.tenant_id, name, if_match)
