from __future__ import annotations

from typing import Annotated

from fastapi import Path, Request, Response, status

from tenantplane.access import Identity, TenantAdmin
from tenantplane.apikey import service
from tenantplane.apikey.cache import KeyCache
from tenantplane.apikey.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyRead
from tenantplane.apikey.tokens import KEY_ID_PATTERN
from tenantplane.db.session import SessionDep
from tenantplane.http.errors import error_responses
from tenantplane.http.etag import NOT_MODIFIED, set_etag
from tenantplane.http.location import set_location
from tenantplane.http.paging import Paging
from tenantplane.http.routers import PrefixedRouter
from tenantplane.http.schemas import PagedList
from tenantplane.idempotency.dependency import IDEMPOTENCY_RESPONSES, CapturingRoute, Idempotent

# Checked by the service (400 INVALID_ID); documented here.
ApiKeyId = Annotated[
    str,
    # The parameter is named `id` on the wire; in code `key_id` (never the builtin).
    Path(alias="id", description="API key id", json_schema_extra={"pattern": KEY_ID_PATTERN}),
]

router = PrefixedRouter(
    prefix="/tenants/{tenant}/apikeys", tags=["apikeys"], route_class=CapturingRoute
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model_exclude_none=True,
    responses=IDEMPOTENCY_RESPONSES,
)
async def create_api_key(
    principal: TenantAdmin,
    _: Idempotent,
    body: ApiKeyCreate,
    session: SessionDep,
    request: Request,
    response: Response,
) -> ApiKeyCreated:
    """Create an API key.

    The raw key (`svc_…`) is in this response only and cannot be read again. Admin.
    """
    issued = await service.issue(
        session,
        keys=request.app.state.keys,
        tenant_id=principal.tenant_id,
        display_name=body.display_name,
        role=body.role,
        # A key made with a key records the person accountable for the creating key.
        created_by=principal.email,
        expires_at=body.expires_at,
    )
    key = issued.key
    set_etag(response, key.resource_version)
    set_location(request, response, key.id)
    response.headers["Cache-Control"] = "no-store"
    return ApiKeyCreated.of(key, issued.raw_key)


@router.get("", response_model_exclude_none=True)
async def list_api_keys(
    principal: TenantAdmin, session: SessionDep, paging: Paging
) -> PagedList[ApiKeyRead]:
    """List the tenant's API keys.

    Key metadata only, never the raw keys; oldest first, paged with `limit` and `continue`.
    Admin.
    """
    page = paging.page("api-keys", principal.tenant_id)
    keys, last = await service.list_keys(session, principal.tenant_id, page)
    return PagedList[ApiKeyRead](
        items=[ApiKeyRead.of(key) for key in keys],
        continue_=paging.next_token("api-keys", principal.tenant_id, last),
    )


@router.get(
    "/{id}",
    response_model_exclude_none=True,
    responses={**error_responses(404), **NOT_MODIFIED},
)
async def get_api_key(
    principal: TenantAdmin, key_id: ApiKeyId, session: SessionDep, response: Response
) -> ApiKeyRead:
    """Read one API key's metadata.

    The id begins with `ak-`. Admin.
    """
    key = await service.get(session, principal.tenant_id, key_id)
    set_etag(response, key.resource_version)
    return ApiKeyRead.of(key)


@router.delete("/{id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404))
async def revoke_api_key(
    principal: TenantAdmin, key_id: ApiKeyId, session: SessionDep, request: Request
) -> None:
    """Revoke an API key.

    The key stops authenticating at once on the server that revoked it and within a second on
    every other replica. Admin.
    """
    await service.revoke(session, principal.tenant_id, key_id)
    key_cache: KeyCache[Identity] = request.app.state.key_cache
    key_cache.forget(key_id)
