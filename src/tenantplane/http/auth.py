"""Authentication (API keys, OIDC tokens) and per-route access levels.

Every route declares its access level through one of the ``Annotated`` aliases below, so
the level is visible in the route's signature and discoverable by introspection
(``access_level_of``). The order of checks is fixed: authenticate (401), validate the
tenant name (400), resolve membership in that tenant (403), check the role (403). A caller
who is not a member of a tenant gets the same 403 whether the tenant exists or not.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Protocol

from fastapi import Depends, Request

from tenantplane.apikey.repository import ApiKeyRepository
from tenantplane.apikey.tokens import hash_key, looks_like_key
from tenantplane.db.session import SessionDep
from tenantplane.http.errors import Forbidden, Unauthenticated
from tenantplane.http.names import TenantPath, path_name
from tenantplane.member.models import Role
from tenantplane.member.repository import MemberRepository


class Access(enum.StrEnum):
    public = "public"
    authenticated = "authenticated"  # any valid credential, whatever the tenant
    member = "member"
    admin = "admin"


class TokenVerifier(Protocol):
    async def verify(self, token: str) -> str:
        """Return the verified email of an identity token, or raise Unauthenticated."""


@dataclass(frozen=True)
class Identity:
    """Who presented the credential, before any tenant is considered."""

    email: str
    api_key_id: str | None = None
    api_key_tenant_id: int | None = None
    api_key_tenant_name: str | None = None
    api_key_role: Role | None = None


@dataclass(frozen=True)
class Principal:
    """An identity acting on one tenant with one role."""

    tenant_id: int
    tenant_name: str
    role: Role
    email: str
    api_key_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role is Role.admin


def _bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise Unauthenticated("missing Authorization header")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise Unauthenticated("Authorization header must be 'Bearer <token>'")
    return token


async def _api_key_identity(request: Request, session: SessionDep, raw_key: str) -> Identity:
    settings = request.app.state.settings
    repository = ApiKeyRepository.from_session(session)
    key = await repository.find_by_hash(hash_key(request.app.state.api_key_secret, raw_key))
    now = datetime.now(UTC)
    if key is None:
        raise Unauthenticated("invalid API key")
    if key.expires_at is not None and key.expires_at <= now:
        raise Unauthenticated("API key expired")
    resolution = timedelta(seconds=settings.api_key_last_used_resolution_seconds)
    if key.last_used_at is None or key.last_used_at < now - resolution:
        await repository.touch(key.id, now, now - resolution)
    return Identity(
        email=key.created_by,
        api_key_id=key.id,
        api_key_tenant_id=key.tenant_id,
        api_key_tenant_name=key.tenant.name,
        api_key_role=key.role,
    )


async def authenticate(request: Request, session: SessionDep) -> Identity:
    token = _bearer_token(request)
    if looks_like_key(token):
        return await _api_key_identity(request, session, token)
    verifier: TokenVerifier | None = request.app.state.token_verifier
    if verifier is None:
        raise Unauthenticated("invalid API key")
    return Identity(email=await verifier.verify(token))


AuthenticatedIdentity = Annotated[Identity, Depends(authenticate)]


async def resolve_principal(identity: Identity, tenant: str, session: SessionDep) -> Principal:
    path_name(tenant, what="tenant", field="tenant")
    if identity.api_key_id is not None:
        if identity.api_key_tenant_name != tenant:
            raise Forbidden("not a member of this tenant")
        assert identity.api_key_tenant_id is not None
        assert identity.api_key_role is not None
        return Principal(
            tenant_id=identity.api_key_tenant_id,
            tenant_name=tenant,
            role=identity.api_key_role,
            email=identity.email,
            api_key_id=identity.api_key_id,
        )
    membership = await MemberRepository.from_session(session).find_membership(
        tenant, identity.email
    )
    if membership is None:
        raise Forbidden("not a member of this tenant")
    tenant_row, member = membership
    return Principal(
        tenant_id=tenant_row.id, tenant_name=tenant, role=member.role, email=member.email
    )


AccessCheck = Callable[..., Awaitable[Any]]


def require(level: Access) -> AccessCheck:
    """The dependency enforcing ``level``; tagged so tests can read a route's level."""

    async def public() -> None:
        return None

    async def authenticated(identity: AuthenticatedIdentity) -> Identity:
        return identity

    async def tenant_scoped(
        identity: AuthenticatedIdentity, tenant: TenantPath, session: SessionDep
    ) -> Principal:
        principal = await resolve_principal(identity, tenant, session)
        if level is Access.admin and not principal.is_admin:
            raise Forbidden("admin access required")
        return principal

    checks: dict[Access, AccessCheck] = {
        Access.public: public,
        Access.authenticated: authenticated,
    }
    check = checks.get(level, tenant_scoped)
    check.access_level = level  # type: ignore[attr-defined]
    return check


def access_level_of(dependency: object) -> Access | None:
    level = getattr(dependency, "access_level", None)
    return level if isinstance(level, Access) else None


Public = Annotated[None, Depends(require(Access.public))]
AnyCaller = Annotated[Identity, Depends(require(Access.authenticated))]
TenantMember = Annotated[Principal, Depends(require(Access.member))]
TenantAdmin = Annotated[Principal, Depends(require(Access.admin))]
