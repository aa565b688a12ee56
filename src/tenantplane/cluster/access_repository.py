"""The reads of cluster access (credentials and token review): plain reads, no session."""

from __future__ import annotations

from sqlalchemy import and_, bindparam, select

from tenantplane.apikey.models import ApiKey
from tenantplane.cluster.models import Cluster
from tenantplane.db.reads import ReadRow, Reads
from tenantplane.member.models import Member
from tenantplane.tenant.models import Tenant

_CLUSTER_UID = select(Cluster.uid).where(
    Cluster.tenant_id == bindparam("tenant_id"), Cluster.name == bindparam("name")
)

_MEMBER = select(Member.id, Member.created_at).where(
    Member.tenant_id == bindparam("tenant_id"), Member.email == bindparam("email")
)

# A token's cluster, its tenant and the token's principal as they are now, in one statement:
# the principal's columns are null when the member was removed or the key revoked.
_REVIEWED = (
    select(
        Cluster.name.label("cluster"),
        Tenant.name.label("tenant"),
        Tenant.state.label("tenant_state"),
        Member.email.label("member_email"),
        Member.created_at.label("member_since"),
        Member.role.label("member_role"),
        ApiKey.role.label("key_role"),
        ApiKey.expires_at.label("key_expires_at"),
    )
    .select_from(Cluster)
    .join(Tenant, Tenant.id == Cluster.tenant_id)
    .outerjoin(
        Member, and_(Member.tenant_id == Cluster.tenant_id, Member.id == bindparam("member_id"))
    )
    .outerjoin(
        ApiKey, and_(ApiKey.tenant_id == Cluster.tenant_id, ApiKey.id == bindparam("key_id"))
    )
    .where(Cluster.uid == bindparam("uid"))
)


async def read_cluster_uid(reads: Reads, tenant_id: int, name: str) -> str | None:
    row = await reads.first(_CLUSTER_UID, {"tenant_id": tenant_id, "name": name})
    return None if row is None else str(row.uid)


async def read_member(reads: Reads, tenant_id: int, email: str) -> ReadRow | None:
    """The member's id and when it became one (ids are reused on SQLite, that instant is not)."""
    return await reads.first(_MEMBER, {"tenant_id": tenant_id, "email": email.lower()})


async def read_reviewed(
    reads: Reads, cluster_uid: str, *, member_id: int | None, key_id: str | None
) -> ReadRow | None:
    """The cluster ``cluster_uid`` (None when it is gone) with its tenant, and the member or
    key a token names, if still there."""
    return await reads.first(
        _REVIEWED, {"uid": cluster_uid, "member_id": member_id, "key_id": key_id}
    )
