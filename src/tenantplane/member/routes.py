from __future__ import annotations

from fastapi import Request, Response, status

from tenantplane.access import TenantAdmin, TenantMember
from tenantplane.db.session import SessionDep
from tenantplane.http.errors import error_responses
from tenantplane.http.etag import NOT_MODIFIED, IfMatch, set_etag
from tenantplane.http.location import set_location
from tenantplane.http.paging import Paging
from tenantplane.http.routers import PrefixedRouter
from tenantplane.http.schemas import PagedList
from tenantplane.idempotency.dependency import IDEMPOTENCY_RESPONSES, CapturingRoute, Idempotent
from tenantplane.member import service
from tenantplane.member.schemas import MemberCreate, MemberRead, MemberUpdate

router = PrefixedRouter(
    prefix="/tenants/{tenant}/members", tags=["members"], route_class=CapturingRoute
)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={**error_responses(409, 412), **IDEMPOTENCY_RESPONSES},
)
async def add_member(
    principal: TenantAdmin,
    _: Idempotent,
    body: MemberCreate,
    session: SessionDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> MemberRead:
    """Add a member.

    The email must be unique in the tenant (case-insensitive). If-Match and the ETag answered
    are the member list's version. Admin.
    """
    added = await service.add(session, principal.tenant_id, body.email, body.role, if_match)
    set_etag(response, added.list_version)
    set_location(request, response, added.member.email)
    return MemberRead.of(added.member)


@router.get("", responses=NOT_MODIFIED)
async def list_members(
    principal: TenantMember, session: SessionDep, response: Response, paging: Paging
) -> PagedList[MemberRead]:
    """List the tenant's members.

    By email, paged with `limit` and `continue`. The ETag answered is the member list's
    version, for If-Match on add. Members.
    """
    page = paging.page("members", principal.tenant_id)
    listed = await service.list_members(session, principal.tenant_id, page)
    set_etag(response, listed.version)
    return PagedList[MemberRead](
        items=[MemberRead.of(member) for member in listed.members],
        continue_=paging.next_token("members", principal.tenant_id, listed.last),
    )


@router.get("/{email}", responses={**error_responses(404), **NOT_MODIFIED})
async def get_member(
    principal: TenantMember, email: str, session: SessionDep, response: Response
) -> MemberRead:
    """Read one member.

    The member is addressed by email, matched case-insensitively. Members.
    """
    member = await service.get(session, principal.tenant_id, service.path_email(email))
    set_etag(response, member.resource_version)
    return MemberRead.of(member)


@router.patch("/{email}", responses=error_responses(404, 409, 412))
async def change_member_role(
    principal: TenantAdmin,
    email: str,
    body: MemberUpdate,
    session: SessionDep,
    response: Response,
    if_match: IfMatch = None,
) -> MemberRead:
    """Change a member's role.

    The last admin cannot be demoted (409). Admin.
    """
    member = await service.change_role(
        session, principal.tenant_id, service.path_email(email), body.role, if_match
    )
    set_etag(response, member.resource_version)
    return MemberRead.of(member)


@router.delete(
    "/{email}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 409, 412)
)
async def remove_member(
    principal: TenantAdmin,
    email: str,
    session: SessionDep,
    response: Response,
    if_match: IfMatch = None,
) -> None:
    """Remove a member.

    The ETag answered is the member list's new version; the last admin cannot be removed (409).
    Admin.
    """
    version = await service.remove(
        session, principal.tenant_id, service.path_email(email), if_match
    )
    set_etag(response, version)
