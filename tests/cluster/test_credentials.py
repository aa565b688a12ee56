"""Cluster credentials through the API, and their review by the token webhook as a cluster's
API server sends it: who is accepted, with which groups, and every way a token stops working.
(tests/kubernetes/test_cluster_access.py runs the same flow with a real API server.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tenantplane.cluster.credentials import AUTHENTICATED_GROUP
from tenantplane.cluster.tokens import MAX_TOKEN_LENGTH, Subject, TokenClaims, mint
from tenantplane.cluster.tokens import webhook_credential as cluster_credential
from tenantplane.member.models import Role
from tenantplane.providers.orchestrator.cluster_access import ADMIN_GROUP, READONLY_GROUP
from tenantplane.tenant.models import TenantState
from tests.factories import ClusterFixture, Factory, TenantFixture
from tests.http_client import bearer
from tests.oidc_provider import MockProvider

REVIEW_API_VERSION = "authentication.k8s.io/v1"


def review_path(cluster: ClusterFixture) -> str:
    return f"/webhooks/kubernetes/clusters/{cluster.uid}/tokenreview"


def review_body(token: str, **spec: Any) -> dict[str, Any]:
    """As kube-apiserver sends it (metadata and an empty status included)."""
    return {
        "kind": "TokenReview",
        "apiVersion": REVIEW_API_VERSION,
        "metadata": {"creationTimestamp": None},
        "spec": {"token": token, **spec},
        "status": {"user": {}},
    }


async def review(
    client: httpx.AsyncClient, factory: Factory, cluster: ClusterFixture, token: str
) -> dict[str, Any]:
    """The review's status, asked with the cluster's own webhook credential."""
    response = await client.post(
        review_path(cluster),
        json=review_body(token),
        headers=bearer(cluster_credential(factory.keys, cluster.uid)),
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert (answer["apiVersion"], answer["kind"]) == (REVIEW_API_VERSION, "TokenReview")
    status: dict[str, Any] = answer["status"]
    return status


async def credentials(
    client: httpx.AsyncClient, tenant: TenantFixture, cluster: str, credential: str
) -> httpx.Response:
    return await client.post(
        f"{tenant.path}/clusters/{cluster}/credentials", headers=bearer(credential)
    )


async def token_for(
    client: httpx.AsyncClient, tenant: TenantFixture, cluster: str, credential: str
) -> str:
    response = await credentials(client, tenant, cluster, credential)
    assert response.status_code == 200, response.text
    token: str = response.json()["token"]
    return token


async def key_id_of(client: httpx.AsyncClient, tenant: TenantFixture, raw_key: str) -> str:
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    ids = [item["id"] for item in listed.json()["items"]]
    # The key ids are listed in creation order; the fixture made the admin's key first.
    return str(ids[0] if raw_key == tenant.admin_key else ids[1])


async def test_keys_get_tokens_the_cluster_accepts_with_their_role(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    issued = await credentials(client, tenant, "dev", tenant.readonly_key)
    assert issued.status_code == 200, issued.text
    assert set(issued.json()) == {"token", "expiresAt"}
    assert issued.headers["Cache-Control"] == "no-store"
    expires_at = datetime.fromisoformat(issued.json()["expiresAt"])
    assert timedelta(minutes=59) < expires_at - datetime.now(UTC) <= timedelta(hours=1)
    assert tenant.readonly_key not in issued.text  # the key itself never travels

    readonly = await review(client, factory, cluster, issued.json()["token"])
    readonly_id = await key_id_of(client, tenant, tenant.readonly_key)
    assert readonly == {
        "authenticated": True,
        "user": {
            "username": f"apikey:{readonly_id}",
            "uid": f"apikey:{readonly_id}",
            "groups": [READONLY_GROUP, AUTHENTICATED_GROUP],
            "extra": {"tenantplane.io/tenant": [tenant.name], "tenantplane.io/cluster": ["dev"]},
        },
    }
    admin = await review(
        client, factory, cluster, await token_for(client, tenant, "dev", tenant.admin_key)
    )
    assert admin["user"]["groups"] == [ADMIN_GROUP, AUTHENTICATED_GROUP]


async def test_a_member_is_the_cluster_user_by_email_until_removed(
    oidc_client: httpx.AsyncClient, factory: Factory, oidc_provider: MockProvider
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    email = "dev@example.com"
    await factory.member(tenant.id, email, Role.admin)
    token = await token_for(oidc_client, tenant, "dev", oidc_provider.id_token(email))
    accepted = await review(oidc_client, factory, cluster, token)
    assert accepted["user"]["username"] == email
    assert accepted["user"]["uid"].startswith("member:")
    assert accepted["user"]["groups"] == [ADMIN_GROUP, AUTHENTICATED_GROUP]

    # A role change applies to the tokens already issued.
    demoted = await oidc_client.patch(
        f"{tenant.path}/members/{email}",
        json={"role": "readonly"},
        headers=bearer(tenant.admin_key),
    )
    assert demoted.status_code == 200, demoted.text
    after = await review(oidc_client, factory, cluster, token)
    assert after["user"]["groups"] == [READONLY_GROUP, AUTHENTICATED_GROUP]

    removed = await oidc_client.delete(
        f"{tenant.path}/members/{email}", headers=bearer(tenant.admin_key)
    )
    assert removed.status_code == 204, removed.text
    refused = await review(oidc_client, factory, cluster, token)
    assert refused == {"authenticated": False, "error": "the member was removed from the tenant"}
    # Added again, the member is a new member: the old token stays dead.
    await factory.member(tenant.id, email, Role.admin)
    assert (await review(oidc_client, factory, cluster, token))["authenticated"] is False


async def test_a_revoked_key_s_tokens_are_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    token = await token_for(client, tenant, "dev", tenant.readonly_key)
    key_id = await key_id_of(client, tenant, tenant.readonly_key)
    deleted = await client.delete(
        f"{tenant.path}/apikeys/{key_id}", headers=bearer(tenant.admin_key)
    )
    assert deleted.status_code == 204, deleted.text
    assert await review(client, factory, cluster, token) == {
        "authenticated": False,
        "error": "the API key was revoked",
    }


async def test_an_expired_key_s_tokens_are_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    token = await token_for(client, tenant, "dev", tenant.readonly_key)
    await factory.expire_api_key(tenant.readonly_key)
    refused = await review(client, factory, cluster, token)
    assert refused == {"authenticated": False, "error": "the API key has expired"}


@pytest.mark.parametrize("state", [TenantState.suspended, TenantState.cancelled])
async def test_an_inactive_tenant_reads_only_or_not_at_all(
    state: TenantState, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    token = await token_for(client, tenant, "dev", tenant.admin_key)
    await factory.tenant_state(tenant.id, state)
    reviewed = await review(client, factory, cluster, token)
    issued = await credentials(client, tenant, "dev", tenant.admin_key)
    if state is TenantState.suspended:
        # Admins are read-only on the cluster while the tenant is, and may still connect.
        assert reviewed["user"]["groups"] == [READONLY_GROUP, AUTHENTICATED_GROUP]
        assert issued.status_code == 200, issued.text
    else:
        assert reviewed == {"authenticated": False, "error": "the tenant is cancelled"}
        assert issued.status_code == 403
        assert issued.json()["code"] == "TENANT_CANCELLED"


async def test_a_token_works_on_its_own_cluster_only(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant, other_tenant = await factory.tenant(), await factory.tenant()
    c1 = await factory.cluster_row(tenant.id, "c1")
    c2 = await factory.cluster_row(tenant.id, "c2")
    # The other tenant's cluster of the same name.
    namesake = await factory.cluster_row(other_tenant.id, "c1")
    token = await token_for(client, tenant, "c1", tenant.admin_key)
    assert (await review(client, factory, c1, token))["authenticated"] is True
    for cluster in (c2, namesake):
        assert await review(client, factory, cluster, token) == {
            "authenticated": False,
            "error": "the token is for another cluster",
        }
    # Deleted and created again under its name, a cluster is another cluster.
    await factory.delete_cluster(c1)
    again = await factory.cluster_row(tenant.id, "c1")
    assert (await review(client, factory, again, token))["authenticated"] is False


async def test_expired_forged_and_foreign_tokens_are_refused(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    key_id = await key_id_of(client, tenant, tenant.admin_key)
    past = datetime.now(UTC) - timedelta(seconds=1)
    expired = mint(factory.keys, TokenClaims(cluster.uid, Subject.api_key, key_id, past))
    valid = await token_for(client, tenant, "dev", tenant.admin_key)
    body, _, signature = valid.partition(".")
    cases = {
        expired: "the token has expired",
        f"{body}.{'A' * len(signature)}": "invalid token signature",
        tenant.admin_key: "not a tenantplane cluster token",  # the API key itself
        "tpc_" + "x" * (MAX_TOKEN_LENGTH * 100): "token too long",
        "tpc_no-signature": "invalid token signature",
        "tpc_!!!.***": "invalid token signature",
        "tpc_e30.a": "malformed token",
    }
    for token, reason in cases.items():
        assert await review(client, factory, cluster, token) == {
            "authenticated": False,
            "error": reason,
        }


async def test_the_webhook_answers_only_the_cluster_s_own_credential(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    other = await factory.cluster_row(tenant.id, "other")
    token = await token_for(client, tenant, "dev", tenant.admin_key)
    body = review_body(token)
    for headers in (
        {},
        bearer(cluster_credential(factory.keys, other.uid)),  # another cluster's
        bearer(tenant.admin_key),
        bearer("tpw_" + "x" * 10_000),
        {"Authorization": "Basic YTpi"},
    ):
        response = await client.post(review_path(cluster), json=body, headers=headers)
        assert response.status_code == 401, response.text
        assert response.headers["WWW-Authenticate"] == "Bearer"
        assert token not in response.text


@pytest.mark.parametrize(
    ("content", "code", "field"),
    [
        (b"{not json", "MALFORMED_JSON", None),
        (b"[]", "VALIDATION_FAILED", None),
        (
            b'{"apiVersion": "authentication.k8s.io/v1beta1", "kind": "TokenReview", '
            b'"spec": {"token": "t"}}',
            "VALIDATION_FAILED",
            "apiVersion",
        ),
        (
            b'{"apiVersion": "authentication.k8s.io/v1", "kind": "SubjectAccessReview", '
            b'"spec": {"token": "t"}}',
            "VALIDATION_FAILED",
            "kind",
        ),
        (
            b'{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}}',
            "VALIDATION_FAILED",
            "spec.token",
        ),
        (
            b'{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", '
            b'"spec": {"token": 7}}',
            "VALIDATION_FAILED",
            "spec.token",
        ),
    ],
)
async def test_a_malformed_review_is_a_400(
    content: bytes, code: str, field: str | None, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    response = await client.post(
        review_path(cluster),
        content=content,
        headers={
            **bearer(cluster_credential(factory.keys, cluster.uid)),
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 400, response.text
    assert response.json()["code"] == code
    assert response.json().get("field") == field


async def test_a_review_larger_than_the_body_limit_is_a_413(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    cluster = await factory.cluster_row(tenant.id, "dev")
    response = await client.post(
        review_path(cluster),
        json=review_body("tpc_" + "x" * (2 * 1024 * 1024)),
        headers=bearer(cluster_credential(factory.keys, cluster.uid)),
    )
    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"


async def test_credentials_refusals(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant, stranger = await factory.tenant(), await factory.tenant()
    await factory.cluster_row(tenant.id, "dev")
    missing = await credentials(client, tenant, "nope", tenant.admin_key)
    assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")
    invalid = await credentials(client, tenant, "NO", tenant.admin_key)
    assert invalid.status_code == 400
    foreign = await credentials(client, tenant, "dev", stranger.admin_key)
    assert foreign.status_code == 403
    anonymous = await client.post(f"{tenant.path}/clusters/dev/credentials")
    assert anonymous.status_code == 401
