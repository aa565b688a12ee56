"""SecretRepository queries that run against every secret of a tenant."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import select

from tenantplane.db.engine import Database
from tenantplane.secret.models import Secret
from tenantplane.secret.repository import SecretRepository
from tests.factories import Factory
from tests.statements import statements_sent


def _target(cluster: str) -> dict[str, str]:
    return {"cluster": cluster, "namespace": "apps", "secretName": "app"}


def _secret(tenant_id: int, name: str, sync: list[str], applied: list[str]) -> Secret:
    return Secret(
        uid=uuid.uuid4().hex,
        tenant_id=tenant_id,
        name=name,
        secret_path=f"apps/{name}",
        sync=[_target(cluster) for cluster in sync],
        applied=[{**_target(cluster), "clusterUid": f"uid-{cluster}"} for cluster in applied],
        reconcile_at=None,
    )


async def test_mark_due_for_clusters_is_one_update_of_the_secrets_naming_them(
    factory: Factory, database: Database
) -> None:
    """The secrets that sync to, or still have a copy in, a named cluster of the tenant are
    made due, in one UPDATE: the tenant's secrets are not read into the process (every
    cluster phase change runs this, and a tenant may have thousands of secrets)."""
    tenant = await factory.tenant()
    other = await factory.tenant()
    async with database.transaction() as session:
        session.add_all(
            [
                _secret(tenant.id, "to-prod", ["prod"], []),
                _secret(tenant.id, "to-staging", ["staging"], []),
                _secret(tenant.id, "copy-left-in-prod", [], ["prod"]),
                _secret(tenant.id, "to-dev-and-prod", ["dev", "prod"], ["dev"]),
                _secret(tenant.id, "to-nowhere", [], []),
                _secret(tenant.id, "to-a-prefix", ["prod-2"], ["prod-2"]),
                _secret(other.id, "other-tenants-prod", ["prod"], ["prod"]),
            ]
        )
    async with database.transaction() as session:
        with statements_sent(database) as sent:
            marked = await SecretRepository.from_session(session).mark_due_for_clusters(
                tenant.id, ["prod", "gone"]
            )
    async with database.sessionmaker() as session:
        due: dict[str, tuple[datetime | None, int]] = {
            name: (reconcile_at, version)
            for name, reconcile_at, version in (
                await session.execute(
                    select(Secret.name, Secret.reconcile_at, Secret.resource_version)
                )
            ).all()
        }
    assert marked == 3
    assert {name for name, (reconcile_at, _) in due.items() if reconcile_at is not None} == {
        "to-prod",
        "copy-left-in-prod",
        "to-dev-and-prod",
    }
    # A look asked for, not a change of the secrets: their versions (ETags) stay.
    assert {version for _, version in due.values()} == {1}
    # (SQLite's transaction begins with its first statement: BEGIN IMMEDIATE.)
    assert [s.split()[0] for s in sent if not s.startswith("BEGIN")] == ["UPDATE"]


async def test_mark_due_for_clusters_of_a_tenant_without_secrets_marks_none(
    factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    async with database.transaction() as session:
        marked = await SecretRepository.from_session(session).mark_due_for_clusters(
            tenant.id, ["prod"]
        )
    assert marked == 0
