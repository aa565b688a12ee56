"""Authentication (API keys, OIDC tokens) and the dependencies that enforce access levels.

It joins the HTTP layer to the features that hold credentials (API keys), memberships
(members) and tenant states, so it belongs to none of them. Every route declares its access
level through one of the ``Annotated`` aliases below, so the level is visible in the route's
signature and discoverable by introspection (``tenantplane.http.access.access_level_of``).
The order of checks is fixed: authenticate (401), validate the tenant name (400), resolve
membership in that tenant (403), check the role (403), and for a write (POST, PUT, PATCH,
DELETE) check that the tenant is active (403 TENANT_SUSPENDED or TENANT_CANCELLED). A caller
who is not a member of a tenant gets the same 403 whether the tenant exists or not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Annotated, Protocol

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.apikey.cache import CachedKey, KeyCache
from tenantplane.apikey.repository import ApiKeyRepository
from tenantplane.apikey.tokens import candidate_hashes, hash_key, looks_like_key
from tenantplane.db.engine import READ_ONLY
from tenantplane.db.session import READ_METHODS, SessionDep
from tenantplane.http.access import Access, AccessCheck, tag_access
from tenantplane.http.errors import Forbidden, Unauthenticated
from tenantplane.http.names import TenantPath, path_name
from tenantplane.keys import KeyRing
from tenantplane.member.models import Role
from tenantplane.member.repository import MemberRepository
from tenantplane.tenant.models import TenantState
from tenantplane.tenant.service import check_writable


class TokenVerifier(Protocol):
    async def verify(self, token: str) -> str:
        """Return the verified email of an identity token, or raise Unauthenticated."""

    async def aclose(self) -> None:
        """Close the connections to the identity provider (at shutdown)."""


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


async def _begin_writing(request: Request, session: AsyncSession) -> None:
    """Make the request's session able to write the key's bookkeeping (rare: once per
    resolution window, or a re-hash). A read's transaction has no write lock (SQLite), and
    one that begins to write after reading can fail at once with "database is locked" when
    another writer committed meanwhile: it ends (it wrote nothing) and the request goes on
    in a transaction that takes the write lock first. One connection at a time throughout."""
    if request.method not in READ_METHODS:
        return
    await session.commit()
    await session.connection(execution_options={READ_ONLY: False})


async def _api_key_identity(request: Request, session: SessionDep, raw_key: str) -> Identity:
    settings = request.app.state.settings
    repository = ApiKeyRepository.from_session(session)
    keys: KeyRing = request.app.state.keys
    cache: KeyCache[Identity] = request.app.state.key_cache
    digest, current_derivation = hash_key(keys, raw_key)

    async def lookup() -> CachedKey[Identity] | None:
        candidates = candidate_hashes(keys, raw_key)
        key = await repository.find_by_hash(candidates)
        # The hash must have been made the way the row says (a legacy hash never passes for
        # a derived one, nor one secret key's for another's).
        if key is None or candidates[key.key_hash] != key.key_derivation:
            return None
        identity = Identity(
            email=key.created_by,
            api_key_id=key.id,
            api_key_tenant_id=key.tenant_id,
            api_key_tenant_name=key.tenant.name,
            api_key_role=key.role,
        )
        return CachedKey(
            identity, key.id, key.expires_at, key.last_used_at, key.key_hash, key.key_derivation
        )

    found = await cache.load(digest, lookup)
    now = datetime.now(UTC)
    if found is None:
        raise Unauthenticated("invalid API key")
    if found.expires_at is not None and found.expires_at <= now:
        raise Unauthenticated("API key expired")
    rehash = found.derivation != current_derivation
    resolution = timedelta(seconds=settings.api_key_last_used_resolution_seconds)
    touch = found.last_used_at is None or found.last_used_at < now - resolution
    if rehash or touch:
        await _begin_writing(request, session)
        if rehash:
            # Made under a fallback or before derivation: re-hashed now that the raw key is
            # here.
            await repository.rehash(found.key_id, found.key_hash, digest, current_derivation)
        if touch:
            await repository.touch(found.key_id, now, now - resolution)
        cache.put(
            digest,
            replace(found, key_hash=digest, derivation=current_derivation, last_used_at=now),
        )
    return found.value


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


# Methods that change something: refused for a tenant that is not active.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


_INACTIVE_STATES = frozenset(TenantState) - {TenantState.active}


def require(level: Access, *, writable_in: frozenset[TenantState] = frozenset()) -> AccessCheck:
    """The dependency enforcing ``level``; tagged so tests can read a route's level.

    ``writable_in``: the states besides active in which the route's writes are allowed
    (only for writes that change nothing of the tenant's and that an inactive tenant needs).
    """

    async def public() -> None:
        return None

    async def authenticated(identity: AuthenticatedIdentity) -> Identity:
        return identity

    async def tenant_scoped(
        request: Request, identity: AuthenticatedIdentity, tenant: TenantPath, session: SessionDep
    ) -> Principal:
        principal = await resolve_principal(identity, tenant, session)
        if level is Access.admin and not principal.is_admin:
            raise Forbidden("admin access required")
        # A write allowed in every state needs no look at the state, nor the lock that
        # orders it against state changes (it may call a remote service: the payment portal).
        if request.method in WRITE_METHODS and not writable_in >= _INACTIVE_STATES:
            await check_writable(session, principal.tenant_id, writable_in)
        return principal

    checks: dict[Access, AccessCheck] = {
        Access.public: public,
        Access.authenticated: authenticated,
    }
    check = tag_access(checks.get(level, tenant_scoped), level)
    check.writable_in = writable_in  # type: ignore[attr-defined]
    return check


def writable_in_of(dependency: object) -> frozenset[TenantState]:
    """The inactive states in which a route declared through ``dependency`` may write."""
    states: object = getattr(dependency, "writable_in", None)
    if not isinstance(states, frozenset):
        return frozenset()
    return frozenset(state for state in states if isinstance(state, TenantState))


Public = Annotated[None, Depends(require(Access.public))]
AnyCaller = Annotated[Identity, Depends(require(Access.authenticated))]
TenantMember = Annotated[Principal, Depends(require(Access.member))]
TenantAdmin = Annotated[Principal, Depends(require(Access.admin))]
# An admin operation that changes nothing of the tenant's and that a suspended or cancelled
# tenant needs to settle its account (the payment portal).
TenantAdminInAnyState = Annotated[
    Principal,
    Depends(require(Access.admin, writable_in=frozenset(TenantState) - {TenantState.active})),
]
