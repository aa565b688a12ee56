"""The SDK against a real server process: every resource, the retry rules, 412, replays."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tenantplane_client import (
    OPERATIONS,
    ApiError,
    AsyncTenantplane,
    ConnectionFailed,
    RetryPolicy,
    Tenantplane,
    models,
)
from tests.clients.conftest import Tenant
from tests.clients.proxy import Fault, Proxy

ROOT = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(base_delay=0.01, max_delay=0.05)
SMALL = {"cpu": "1", "memory": "1Gi", "storage": "1Gi"}


def connect(url: str, tenant: Tenant, **options: Any) -> Tenantplane:
    return Tenantplane(url, tenant.name, tenant.key, retry=options.pop("retry", FAST), **options)


def test_the_generated_models_and_sync_client_are_current() -> None:
    """CI fails when docs/openapi.json (or an _async*.py) changed and the SDK is stale."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "clients" / "python" / "codegen.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_every_operation_of_the_document_has_a_client_method() -> None:
    document = json.loads((ROOT / "docs" / "openapi.json").read_text())
    operations = {
        operation["operationId"]
        for path, methods in document["paths"].items()
        if path.startswith("/api/v1/") and not path.startswith("/api/v1/webhooks/")
        for operation in methods.values()
    }
    assert set(OPERATIONS) == operations
    sync = Tenantplane("http://127.0.0.1:1", "t", "k")
    asynchronous = AsyncTenantplane("http://127.0.0.1:1", "t", "k")
    for dotted in OPERATIONS.values():
        for client in (sync, asynchronous):
            target: Any = client
            for part in dotted.split("."):
                target = getattr(target, part)
            assert callable(target), dotted
    # Each component schema with properties has its model, with the document's fields.
    for name, schema in document["components"]["schemas"].items():
        if schema.get("type") == "object" and schema.get("properties"):
            model = models.SCHEMA_NAMES[name]
            aliases = {field.alias or key for key, field in model.model_fields.items()}
            assert aliases == set(schema["properties"]), name


def test_cluster_lifecycle_with_wait_and_progress(tenant: Tenant) -> None:
    seen: list[str] = []
    with connect(tenant.url, tenant) as api:
        versions = api.versions()
        ordered = sorted(
            (item.version for item in versions),
            key=lambda version: tuple(int(part) for part in version.split(".")),
        )
        created = api.clusters.create(
            models.ClusterCreate(
                name="web", version=ordered[0], resources=models.ResourcesInput(**SMALL)
            )
        )
        assert created.name == "web"
        assert created.warnings == []
        running = api.clusters.wait_for(
            "web",
            timeout=60,
            interval=0.05,
            on_progress=lambda cluster: seen.append(cluster.status.phase or ""),
        )
        assert running.status.phase == "Running"
        assert seen[-1] == "Running"
        assert [cluster.name for cluster in api.clusters.list()] == ["web"]
        details = api.clusters.connection_details("web")
        assert details.endpoint.startswith("https://")
        upgraded = api.clusters.upgrade("web", ordered[1])
        assert upgraded.version == ordered[1]
        deleted = api.clusters.delete("web")
        assert deleted.status.phase == "Terminating"
        with pytest.raises(ApiError) as missing:
            api.clusters.get("nope")
        assert (missing.value.status, missing.value.code) == (404, "NOT_FOUND")
        assert not missing.value.retryable


def test_members_keys_tenant_and_catalogues(tenant: Tenant) -> None:
    with connect(tenant.url, tenant) as api:
        added = api.members.add("dev@example.com", "readonly")
        assert added.role == "readonly"
        assert api.members.update("dev@example.com", "admin").role == "admin"
        api.members.add("ops@example.com", "readonly")
        assert api.members.get("ops@example.com").email == "ops@example.com"
        api.members.remove("ops@example.com")
        emails = [member.email for member in api.members.list()]
        assert "ops@example.com" not in emails
        assert "dev@example.com" in emails
        key = api.apikeys.create({"displayName": "ci", "role": "readonly"})
        assert key.key.startswith("svc_")
        assert api.apikeys.get(key.id).display_name == "ci"
        api.apikeys.revoke(key.id)
        assert api.get_tenant().name == tenant.name
        assert {plan.name for plan in api.plans()} >= {"starter", "pro"}
        assert api.invoices.list() == []
        with pytest.raises(ApiError) as invalid:
            api.members.add("not-an-email", "readonly")
        assert (invalid.value.status, invalid.value.field) == (400, "email")


async def test_the_async_client(tenant: Tenant) -> None:
    async with AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as api:
        await api.members.add("async@example.com", "readonly")
        emails = [member.email for member in await api.members.list()]
        assert "async@example.com" in emails


async def test_every_collection_is_a_list_in_both_clients(tenant: Tenant) -> None:
    """One shape: each method that reads a collection returns a list of its items (the
    versions' default is the item whose ``default`` is true), sync and async alike."""
    async with AsyncTenantplane(tenant.url, tenant.name, tenant.key, retry=FAST) as aio:
        reads = {"versions": await aio.versions(), "plans": await aio.plans()}
    with connect(tenant.url, tenant) as api:
        assert api.versions() == reads["versions"]
        assert api.plans() == reads["plans"]
    for name, items in reads.items():
        assert isinstance(items, list), name
        assert items, name
    assert all(isinstance(item, models.VersionRead) for item in reads["versions"])
    assert [item.default for item in reads["versions"]].count(True) == 1


def test_429_then_503_are_retried(tenant: Tenant, proxy: tuple[Proxy, str]) -> None:
    fake, url = proxy
    fake.inject(Fault(429, {"Retry-After": "0"}, "RATE_LIMITED"), Fault(503, code="DATABASE_BUSY"))
    with connect(url, tenant) as api:
        assert api.clusters.list() == []
    assert [seen.status for seen in fake.seen] == [429, 503, 200]


def test_retries_stop_after_five_attempts(tenant: Tenant, proxy: tuple[Proxy, str]) -> None:
    fake, url = proxy
    fake.inject(*[Fault(500, code="INTERNAL")] * 6)
    with connect(url, tenant) as api, pytest.raises(ApiError) as failed:
        api.clusters.list()
    assert failed.value.status == 500
    assert failed.value.retryable
    assert len(fake.seen) == 5


def test_a_post_without_idempotency_key_is_not_retried(
    tenant: Tenant, proxy: tuple[Proxy, str]
) -> None:
    fake, url = proxy
    fake.inject(Fault(503, code="DATABASE_BUSY"))
    with connect(url, tenant, idempotency_keys=False) as api, pytest.raises(ApiError):
        api.members.add("once@example.com", "readonly")
    assert len(fake.seen) == 1
    assert "Idempotency-Key" not in fake.seen[0].headers


def test_a_dropped_post_is_retried_and_replayed_without_a_duplicate(
    tenant: Tenant, proxy: tuple[Proxy, str]
) -> None:
    fake, url = proxy
    fake.inject(Fault(drop_after_forward=True, method="POST"))
    with connect(url, tenant) as api:
        created = api.clusters.create({"name": "once", "resources": SMALL})
        assert created.name == "once"
        assert [cluster.name for cluster in api.clusters.list()] == ["once"]
    posts = [seen for seen in fake.seen if seen.method == "POST"]
    assert [seen.status for seen in posts] == [None, 201]
    assert posts[0].headers["Idempotency-Key"] == posts[1].headers["Idempotency-Key"]
    assert posts[0].upstream_headers["etag"] == posts[1].upstream_headers["etag"]
    assert posts[1].upstream_headers["idempotent-replayed"] == "true"


def test_a_dropped_post_without_key_is_not_retried(
    tenant: Tenant, proxy: tuple[Proxy, str]
) -> None:
    fake, url = proxy
    fake.inject(Fault(drop_after_forward=True, method="POST"))
    with connect(url, tenant, idempotency_keys=False) as api:
        with pytest.raises(ConnectionFailed):
            api.members.add("dropped@example.com", "readonly")
        # It did happen: the client just never heard.
        assert "dropped@example.com" in [member.email for member in api.members.list()]


def test_update_refetches_and_reapplies_on_412(tenant: Tenant, proxy: tuple[Proxy, str]) -> None:
    fake, url = proxy
    with connect(url, tenant) as api:
        api.clusters.create({"name": "up", "resources": SMALL})
        # Settled first: while it provisions, the reconciler moves its resourceVersion too,
        # and a real 412 would add to the one injected here.
        api.clusters.wait_for("up", interval=0.1)
        version = next(item.version for item in api.versions() if item.default)
        fake.inject(Fault(412, code="PRECONDITION_FAILED", method="PATCH"))
        fake.seen.clear()
        calls: list[str] = []

        def mutate(cluster: models.ClusterRead) -> models.ClusterUpdate:
            calls.append(cluster.resource_version)
            return models.ClusterUpdate(version=version)

        updated = api.update(api.clusters.get("up"), mutate)
        assert updated.version == version
    assert len(calls) == 2
    methods = [(seen.method, seen.status) for seen in fake.seen if "/clusters/up" in seen.path]
    assert methods[-4:] == [("GET", 200), ("PATCH", 412), ("GET", 200), ("PATCH", 200)]
    assert all("If-Match" in seen.headers for seen in fake.seen if seen.method == "PATCH")


def test_update_gives_up_after_three_refetches(tenant: Tenant, proxy: tuple[Proxy, str]) -> None:
    fake, url = proxy
    with connect(url, tenant) as api:
        api.clusters.create({"name": "busy", "resources": SMALL})
        fake.inject(*[Fault(412, code="PRECONDITION_FAILED", method="PATCH")] * 4)
        with pytest.raises(ApiError) as failed:
            api.clusters.update("busy", lambda _: {"version": "1.33"})
    assert failed.value.status == 412
    assert len([seen for seen in fake.seen if seen.method == "PATCH"]) == 4
