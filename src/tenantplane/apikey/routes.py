from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from tenantplane.apikey import service
from tenantplane.apikey.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyRead
from tenantplane.db.session import SessionDep
from tenantplane.http.auth import TenantAdmin
from tenantplane.http.etag import set_etag
from tenantplane.http.schemas import ItemList

router = APIRouter(prefix="/tenants/{tenant}/apikeys", tags=["apikeys"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model_exclude_none=True)
async def create_api_key(
    principal: TenantAdmin,
    body: ApiKeyCreate,
    session: SessionDep,
    request: Request,
    response: Response,
) -> ApiKeyCreated:
    issued = await service.issue(
        session,
        secret=request.app.state.api_key_secret,
        tenant_id=principal.tenant_id,
        display_name=body.display_name,
        role=body.role,
        # A key made with a key records the person accountable for the creating key.
        created_by=principal.email,
        expires_at=body.expires_at,
    )
    key = issued.key
    set_etag(response, key.resource_version)
    response.headers["Cache-Control"] = "no-store"
    return ApiKeyCreated(
        id=key.id,
        display_name=key.display_name,
        role=key.role,
        expires_at=key.expires_at,
        created_at=key.created_at,
        created_by=key.created_by,
        key=issued.raw_key,
    )


@router.get("", response_model_exclude_none=True)
async def list_api_keys(principal: TenantAdmin, session: SessionDep) -> ItemList[ApiKeyRead]:
    keys = await service.list_keys(session, principal.tenant_id)
    return ItemList[ApiKeyRead](items=[ApiKeyRead.of(key) for key in keys])


@router.get("/{id}", response_model_exclude_none=True)
async def get_api_key(
    principal: TenantAdmin, id: str, session: SessionDep, response: Response
) -> ApiKeyRead:
    key = await service.get(session, principal.tenant_id, id)
    set_etag(response, key.resource_version)
    return ApiKeyRead.of(key)


@router.delete("/{id}", status_code=status.HTTP_204_NO_CONTENT)
async def revoke_api_key(principal: TenantAdmin, id: str, session: SessionDep) -> None:
    await service.revoke(session, principal.tenant_id, id)
