"""Member rules: one membership per normalised email, and always at least one admin.

Every write locks the tenant's member list first (``lock_list``), then checks and changes;
the request's session commits. Each write advances the list's collection version, which is
the ETag of the list and of POST (If-Match on POST compares against it). A single member's
ETag is its own resourceVersion (If-Match on PATCH and DELETE).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.emails import InvalidEmail, normalise_email
from tenantplane.http.errors import Conflict, NotFound, ValidationFailed
from tenantplane.http.etag import check_if_match
from tenantplane.http.paging import WHOLE, Page, SortKey, split_page
from tenantplane.member.models import Member, Role
from tenantplane.member.repository import MemberRepository


@dataclass(frozen=True)
class MemberList:
    members: Sequence[Member]
    version: int
    # The last member's sort key when more remain (http/paging.py).
    last: SortKey | None = None


@dataclass(frozen=True)
class AddedMember:
    member: Member
    list_version: int


def path_email(value: str) -> str:
    """The email of a member addressed in the path, normalised (400 when invalid)."""
    try:
        return normalise_email(value)
    except InvalidEmail as exc:
        raise ValidationFailed(str(exc), field="email") from None


async def list_members(session: AsyncSession, tenant_id: int, page: Page = WHOLE) -> MemberList:
    """A page of the tenant's members by email, and the member list's version."""
    repository = MemberRepository.from_session(session)
    version = await repository.list_version(tenant_id)
    after = None if page.after is None else str(page.after[0])
    limit = None if page.limit is None else page.limit + 1
    found = await repository.list(tenant_id, after, limit)
    members, last = split_page(found, page.limit, lambda member: (member.email,))
    return MemberList(members, version, last)


async def get(session: AsyncSession, tenant_id: int, email: str) -> Member:
    member = await MemberRepository.from_session(session).get(tenant_id, email)
    if member is None:
        raise NotFound("member")
    return member


async def add(
    session: AsyncSession, tenant_id: int, email: str, role: Role, if_match: str | None
) -> AddedMember:
    repository = MemberRepository.from_session(session)
    check_if_match(if_match, await repository.lock_list(tenant_id))
    if await repository.get(tenant_id, email) is not None:
        raise _already_member(email)
    member = Member(tenant_id=tenant_id, email=email, role=role)
    repository.add(member)
    try:
        await session.flush()
    except IntegrityError as exc:  # only without the list lock, e.g. a concurrent CLI
        raise _already_member(email) from exc
    return AddedMember(member, await repository.bump_list_version(tenant_id))


async def change_role(
    session: AsyncSession, tenant_id: int, email: str, role: Role, if_match: str | None
) -> Member:
    repository = MemberRepository.from_session(session)
    await repository.lock_list(tenant_id)
    member = await get(session, tenant_id, email)
    check_if_match(if_match, member.resource_version)
    if member.role is role:
        return member
    if member.role is Role.admin:
        await _keep_an_admin(repository, tenant_id, "demoted")
    member.role = role
    await session.flush()
    await repository.bump_list_version(tenant_id)
    return member


async def remove(session: AsyncSession, tenant_id: int, email: str, if_match: str | None) -> int:
    """Remove a member; returns the member list's new version."""
    repository = MemberRepository.from_session(session)
    await repository.lock_list(tenant_id)
    member = await get(session, tenant_id, email)
    check_if_match(if_match, member.resource_version)
    if member.role is Role.admin:
        await _keep_an_admin(repository, tenant_id, "removed")
    await repository.delete(member)
    await session.flush()
    return await repository.bump_list_version(tenant_id)


async def _keep_an_admin(repository: MemberRepository, tenant_id: int, action: str) -> None:
    if await repository.count_admins(tenant_id) <= 1:
        raise Conflict(
            f"the last admin of a tenant cannot be {action}; make another member admin first",
            code="LAST_ADMIN",
            field="role" if action == "demoted" else "email",
        )


def _already_member(email: str) -> Conflict:
    return Conflict(f"{email} is already a member of this tenant", field="email")
