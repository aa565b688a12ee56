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
from datetime import datetime, timedelta
from typing import Annotated, Protocol

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.apikey.cache import CachedKey, KeyCache
from tenantplane.apikey.repository import ApiKeyRepository, find_credential
from tenantplane.apikey.tokens import candidate_hashes, hash_key, looks_like_key
from tenantplane.console.service import session_identity
from tenantplane.console.tokens import is_session_token
from tenantplane.db.engine import Database
from tenantplane.db.reads import Reads
from tenantplane.db.session import SessionDep, get_database
from tenantplane.event.audit import actor_of, audit_write, record_refusal
from tenantplane.http.access import Access, AccessCheck, tag_access
from tenantplane.http.errors import Forbidden, Unauthenticated
from tenantplane.http.names import TenantPath, path_name
from tenantplane.keys import KeyRing
from tenantplane.member.models import Role
from tenantplane.member.repository import find_membership
from tenantplane.tenant.models import TenantState
from tenantplane.tenant.repository import TenantRepository
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


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise Unauthenticated("missing Authorization header")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise Unauthenticated("Authorization header must be 'Bearer <token>'")
    return token


async def _lookup_key(reads: Reads, keys: KeyRing, raw_key: str) -> CachedKey[Identity] | None:
    candidates = candidate_hashes(keys, raw_key)
    key = await find_credential(reads, candidates)
    # The hash must have been made the way the row says (a legacy hash never passes for a
    # derived one, nor one secret key's for another's).
    if key is None or candidates[key.key_hash] != key.key_derivation:
        return None
    identity = Identity(
        email=key.created_by,
        api_key_id=key.id,
        api_key_tenant_id=key.tenant_id,
        api_key_tenant_name=key.tenant_name,
        api_key_role=key.role,
    )
    return CachedKey(
        identity, key.id, key.expires_at, key.last_used_at, key.key_hash, key.key_derivation
    )


async def _record_use(
    database: Database,
    found: CachedKey[Identity],
    digest: bytes,
    derivation: str,
    now: datetime,
    resolution: timedelta,
) -> None:
    """Re-hash a key made under a fallback (or before derivation) and record its use, in a
    transaction of its own: it is committed before the request's own session begins, so a
    request never holds two connections, and a request that fails still counts as a use."""
    async with database.transaction() as session:
        repository = ApiKeyRepository.from_session(session)
        if found.derivation != derivation:
            await repository.rehash(found.key_id, found.key_hash, digest, derivation)
        await repository.touch(found.key_id, now, now - resolution)


async def _api_key_identity(request: Request, raw_key: str) -> Identity:
    settings = request.app.state.settings
    database: Database = request.app.state.database
    keys: KeyRing = request.app.state.keys
    cache: KeyCache[Identity] = request.app.state.key_cache
    digest, current_derivation = hash_key(keys, raw_key)
    found = await cache.load(digest, lambda: _lookup_key(database.reads, keys, raw_key))
    # Expiry and lastUsedAt by the database's clock (db/clock.py), as the key's expiresAt
    # and every other stamp are: a replica whose clock ran ahead would refuse keys early.
    now = await database.clock.now()
    if found is None:
        raise Unauthenticated("invalid API key")
    if found.expires_at is not None and found.expires_at <= now:
        raise Unauthenticated("API key expired")
    resolution = timedelta(seconds=settings.api_key_last_used_resolution_seconds)
    rehash = found.derivation != current_derivation
    if rehash or found.last_used_at is None or found.last_used_at < now - resolution:
        await cache.record_use(
            found.key_id,
            lambda: _record_use(database, found, digest, current_derivation, now, resolution),
        )
        cache.amend(
            digest,
            replace(found, key_hash=digest, derivation=current_derivation, last_used_at=now),
        )
    return found.value


async def _console_identity(request: Request, token: str) -> Identity:
    """A console session acts as the member who signed in, or as the API key it signed in
    with (checked as any presented key: revoked or expired, the session is refused)."""
    state = request.app.state
    found = await session_identity(state.database, state.settings, state.keys, token)
    if found.api_key is not None:
        return await _api_key_identity(request, found.api_key)
    return Identity(email=found.email)


async def authenticate(request: Request) -> Identity:
    token = bearer_token(request)
    if is_session_token(token):
        return await _console_identity(request, token)
    if looks_like_key(token):
        return await _api_key_identity(request, token)
    verifier: TokenVerifier | None = request.app.state.token_verifier
    if verifier is None:
        raise Unauthenticated("invalid API key")
    return Identity(email=await verifier.verify(token))


AuthenticatedIdentity = Annotated[Identity, Depends(authenticate)]


def not_a_member() -> Forbidden:
    """The refusal of a caller who is not a member of the tenant, the same whether the
    tenant exists or not."""
    return Forbidden("not a member of this tenant")


async def resolve_principal(identity: Identity, tenant: str, reads: Reads) -> Principal:
    path_name(tenant, what="tenant", field="tenant")
    if identity.api_key_id is not None:
        if identity.api_key_tenant_name != tenant:
            raise not_a_member()
        assert identity.api_key_tenant_id is not None
        assert identity.api_key_role is not None
        return Principal(
            tenant_id=identity.api_key_tenant_id,
            tenant_name=tenant,
            role=identity.api_key_role,
            email=identity.email,
            api_key_id=identity.api_key_id,
        )
    membership = await find_membership(reads, tenant, identity.email)
    if membership is None:
        raise not_a_member()
    return Principal(
        tenant_id=membership.tenant_id,
        tenant_name=tenant,
        role=membership.role,
        email=membership.email,
    )


# Methods that change something: refused for a tenant that is not active.
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


_INACTIVE_STATES = frozenset(TenantState) - {TenantState.active}


def require(
    level: Access,
    *,
    writable_in: frozenset[TenantState] = frozenset(),
    reads_only: bool = False,
) -> AccessCheck:
    """The dependency enforcing ``level``; tagged so tests can read a route's level.

    ``writable_in``: the states besides active in which the route's writes are allowed
    (only for writes that change nothing of the tenant's and that an inactive tenant needs).
    ``reads_only``: for GETs answered by plain reads (db/reads.py): no request session is
    opened for the check (it costs as much as the read itself). Refused for writes.
    """

    async def public() -> None:
        return None

    async def authenticated(identity: AuthenticatedIdentity) -> Identity:
        return identity

    async def principal_of(request: Request, identity: Identity, tenant: str) -> Principal:
        principal = await resolve_principal(identity, tenant, get_database(request).reads)
        if level is Access.admin and not principal.is_admin:
            raise Forbidden("admin access required")
        return principal

    async def tenant_scoped(
        request: Request, identity: AuthenticatedIdentity, tenant: TenantPath, session: SessionDep
    ) -> Principal:
        if request.method not in WRITE_METHODS:
            return await principal_of(request, identity, tenant)
        actor = actor_of(identity.email, identity.api_key_id)
        try:
            principal = await checked_writer(request, identity, tenant, session)
        except Forbidden:
            # Whatever the request did before the refusal is not kept; the refusal is.
            await session.rollback()
            tenant_id = await TenantRepository.from_session(session).id_of(tenant)
            if tenant_id is not None:
                await record_refusal(session, request, tenant_id, actor)
            raise
        audit_write(request, principal.tenant_id, actor)
        return principal

    async def checked_writer(
        request: Request, identity: Identity, tenant: str, session: AsyncSession
    ) -> Principal:
        principal = await principal_of(request, identity, tenant)
        # A write allowed in every state needs no look at the state, nor the lock that
        # orders it against state changes (it may call a remote service: the payment portal).
        if writable_in >= _INACTIVE_STATES:
            return principal
        await check_writable(session, principal.tenant_id, writable_in)
        return principal

    async def tenant_scoped_reads(
        request: Request, identity: AuthenticatedIdentity, tenant: TenantPath
    ) -> Principal:
        if request.method in WRITE_METHODS:
            # A programming error the access tests catch: this check opens no session, so
            # it cannot hold the tenant's state for a write.
            raise RuntimeError(f"{request.method} declared with a reading access check")
        return await principal_of(request, identity, tenant)

    checks: dict[Access, AccessCheck] = {
        Access.public: public,
        Access.authenticated: authenticated,
    }
    scoped = tenant_scoped_reads if reads_only else tenant_scoped
    check = tag_access(checks.get(level, scoped), level)
    check.writable_in = writable_in  # type: ignore[attr-defined]
    check.reads_only = reads_only  # type: ignore[attr-defined]
    return check


def reads_only(dependency: object) -> bool:
    """Whether ``dependency`` is an access check for routes that only read (no session)."""
    return getattr(dependency, "reads_only", False) is True


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
# The same levels for GETs that read through ``ReadsDep`` and open no session.
TenantMemberReads = Annotated[Principal, Depends(require(Access.member, reads_only=True))]
TenantAdminReads = Annotated[Principal, Depends(require(Access.admin, reads_only=True))]
# A member's operation that changes nothing of the tenant's and that a suspended tenant still
# needs (cluster credentials: read-only ones, the review decides).
TenantMemberUnlessCancelled = Annotated[
    Principal, Depends(require(Access.member, writable_in=frozenset({TenantState.suspended})))
]
# An admin operation that changes nothing of the tenant's and that a suspended or cancelled
# tenant needs to settle its account (the payment portal).
TenantAdminInAnyState = Annotated[
    Principal,
    Depends(require(Access.admin, writable_in=frozenset(TenantState) - {TenantState.active})),
]
