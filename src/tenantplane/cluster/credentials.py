"""Cluster access: issuing short-lived cluster tokens, and reviewing them for the clusters'
API servers (docs/clusters.md, "Access with kubectl"; docs/security.md, "Cluster access").

The review decides from the database as it is now, not as it was when the token was issued:
a member removed or a key revoked is refused at the next review, a member whose role changed
gets the new role's group, and a suspended tenant's principals are all read-only.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tenantplane.access import Principal, not_a_member
from tenantplane.cluster.access_repository import read_cluster_uid, read_member, read_reviewed
from tenantplane.cluster.access_schemas import ClusterCredentials
from tenantplane.cluster.tokens import (
    InvalidToken,
    Subject,
    TokenClaims,
    mint,
    verify,
)
from tenantplane.db.base import epoch_microseconds
from tenantplane.db.reads import ReadRow, Reads
from tenantplane.http.errors import NotFound
from tenantplane.keys import KeyRing
from tenantplane.member.models import Role
from tenantplane.providers.orchestrator.cluster_access import ADMIN_GROUP, READONLY_GROUP
from tenantplane.tenant.models import TenantState

AUTHENTICATED_GROUP = "system:authenticated"
# Extra attributes of the user, for the cluster's audit log and its admission webhooks.
EXTRA_TENANT = "tenantplane.io/tenant"
EXTRA_CLUSTER = "tenantplane.io/cluster"
# The user's uid on the cluster: "member:<id>" or "apikey:<id>".
_UID_KIND = {Subject.member: "member", Subject.api_key: "apikey"}


async def issue(
    reads: Reads,
    keys: KeyRing,
    principal: Principal,
    name: str,
    now: datetime,
    lifetime: timedelta,
) -> ClusterCredentials:
    """A token for cluster ``name`` of the principal's tenant, bound to the principal."""
    cluster_uid = await read_cluster_uid(reads, principal.tenant_id, name)
    if cluster_uid is None:
        raise NotFound("cluster")
    # Whole seconds: the token carries its expiry so, and the answer says the same instant.
    expires_at = (now + lifetime).replace(microsecond=0)
    if principal.api_key_id is not None:
        claims = TokenClaims(cluster_uid, Subject.api_key, principal.api_key_id, expires_at)
    else:
        member = await read_member(reads, principal.tenant_id, principal.email)
        if member is None:  # removed since the request was authorised
            raise not_a_member()
        since = epoch_microseconds(member.created_at)
        claims = TokenClaims(cluster_uid, Subject.member, str(member.id), expires_at, since)
    return ClusterCredentials(token=mint(keys, claims), expires_at=expires_at)


class Refused(Exception):
    """Why a token is refused: said to the cluster's API server (which logs it)."""


def _groups(role: str, tenant_state: str) -> list[str]:
    # A suspended tenant may read, not write: its admins are read-only on the cluster too.
    admin = role == Role.admin and tenant_state == TenantState.active
    return [ADMIN_GROUP if admin else READONLY_GROUP, AUTHENTICATED_GROUP]


def _user(claims: TokenClaims, row: ReadRow) -> dict[str, Any]:
    if claims.subject is Subject.member:
        # Removed, or removed and added again (a new member, who asks for new tokens).
        if row.member_email is None or epoch_microseconds(row.member_since) != claims.member_since:
            raise Refused("the member was removed from the tenant")
        username, role = row.member_email, row.member_role
    else:
        if row.key_role is None:
            raise Refused("the API key was revoked")
        username, role = f"apikey:{claims.subject_id}", row.key_role
    return {
        "username": username,
        "uid": f"{_UID_KIND[claims.subject]}:{claims.subject_id}",
        "groups": _groups(role, row.tenant_state),
        "extra": {EXTRA_TENANT: [row.tenant], EXTRA_CLUSTER: [row.cluster]},
    }


async def review(
    reads: Reads, keys: KeyRing, cluster_uid: str, token: str, now: datetime
) -> dict[str, Any]:
    """The TokenReview status for ``token`` presented to cluster ``cluster_uid``."""
    try:
        claims = verify(keys, token)
        if claims.cluster_uid != cluster_uid:
            raise Refused("the token is for another cluster")
        if claims.expires_at <= now:
            raise Refused("the token has expired")
        is_member = claims.subject is Subject.member
        row = await read_reviewed(
            reads,
            cluster_uid,
            member_id=int(claims.subject_id) if is_member else None,
            key_id=None if is_member else claims.subject_id,
        )
        if row is None:
            raise Refused("the cluster no longer exists")
        if row.tenant_state == TenantState.cancelled:
            raise Refused("the tenant is cancelled")
        if row.key_expires_at is not None and row.key_expires_at <= now:
            raise Refused("the API key has expired")
        return {"authenticated": True, "user": _user(claims, row)}
    except InvalidToken as invalid:
        return {"authenticated": False, "error": str(invalid)}
    except Refused as refused:
        return {"authenticated": False, "error": str(refused)}
