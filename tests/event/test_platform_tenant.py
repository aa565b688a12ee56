"""The tenant's lifecycle as platform events (``tenant.suspended``, ``tenant.resumed``,
``tenant.cancelled``, the operator as their actor), and the operator's other commands that
change a tenant as audit events of the operator: ``tenant create``, ``tenant update``,
``apikey create``, ``member add``. Run as the operator runs them (the CLI), read back
through GET /events."""

from __future__ import annotations

import json
from typing import Any

from tests.cluster.polling import create_cluster
from tests.event.stream import events
from tests.factories import Factory, TenantFixture
from tests.tenant.conftest import Operated, deployment  # noqa: F401 (a fixture)

OPERATOR = {"kind": "operator"}
SYSTEM = {"kind": "system"}


async def recorded(client: Any, tenant: TenantFixture, **query: str) -> list[dict[str, Any]]:
    """The tenant's events matching ``query``, oldest first (without id, time, hash)."""
    found = await events(client, tenant, **query)
    shown = ("type", "action", "resource", "actor", "data")
    return [{key: event[key] for key in shown} for event in reversed(found)]


def operator_event(
    kind: str,
    action: str,
    name: str,
    event_type: str = "audit",
    **data: Any,
) -> dict[str, Any]:
    return {
        "type": event_type,
        "action": action,
        "resource": {"kind": kind, "name": name},
        "actor": OPERATOR,
        "data": data,
    }


def state(action: str, tenant: TenantFixture) -> dict[str, Any]:
    return operator_event("tenant", action, tenant.name, "platform", by="operator")


async def test_suspend_and_resume_are_recorded_once_each(
    deployment: Operated,  # noqa: F811
    factory: Factory,
) -> None:
    tenant = await factory.tenant()
    await deployment.cli("tenant", "suspend", tenant.name)
    await deployment.cli("tenant", "suspend", tenant.name)  # already: nothing changes
    await deployment.cli("tenant", "resume", tenant.name)
    await deployment.cli("tenant", "resume", tenant.name)  # active: nothing changes
    assert await recorded(deployment.client, tenant) == [
        state("tenant.suspended", tenant),
        state("tenant.resumed", tenant),
    ]


async def test_cancelling_records_the_tenant_its_clusters_and_its_final_invoice(
    deployment: Operated,  # noqa: F811
    factory: Factory,
) -> None:
    tenant = await factory.tenant()
    await create_cluster(deployment.client, tenant.path, tenant.admin_key, "dev")
    before = len(await recorded(deployment.client, tenant))  # the cluster's creation
    output = await deployment.cli("tenant", "cancel", tenant.name, "--json")
    final = json.loads(output)["final"]

    cancelled = (await recorded(deployment.client, tenant))[before:]
    assert [(entry["type"], entry["action"]) for entry in cancelled[:3]] == [
        ("platform", "tenant.cancelled"),
        ("platform", "cluster.phase_changed"),
        ("platform", "invoice.issued"),
    ]
    assert cancelled[0] == state("tenant.cancelled", tenant)
    assert cancelled[1] == {
        "type": "platform",
        "action": "cluster.phase_changed",
        "resource": {"kind": "cluster", "name": "dev"},
        "actor": SYSTEM,
        "data": {"from": "Pending", "to": "Terminating"},
    }
    assert cancelled[2]["resource"] == {"kind": "invoice", "name": final}
    # Then the alerting configuration taken off the backend, after the commit.
    assert [(entry["action"], entry["data"]["operation"]) for entry in cancelled[3:]] == [
        ("alerting.applied", "remove")
    ]


async def test_the_operators_changes_to_a_tenant_are_audited_as_the_operators(
    deployment: Operated,  # noqa: F811
    factory: Factory,
) -> None:
    created = json.loads(
        await deployment.cli(
            "tenant",
            "create",
            "acme-ops",
            "--plan",
            "pro",
            "--admin-email",
            "Ops@Acme.example",
            "--json",
        )
    )
    key = created["apiKey"]
    tenant = TenantFixture("acme-ops", 0, key["key"], key["key"], "ops@acme.example")
    await deployment.cli("tenant", "update", tenant.name, "--plan", "business")
    await deployment.cli("tenant", "update", tenant.name, "--no-enforce-log-limit")
    issued = json.loads(
        await deployment.cli("apikey", "create", tenant.name, "--role", "readonly", "--json")
    )
    await deployment.cli("member", "add", tenant.name, "dev@acme.example", "--role", "readonly")

    assert await recorded(deployment.client, tenant) == [
        operator_event("tenant", "tenant.create", tenant.name, plan="pro"),
        operator_event("member", "member.create", "ops@acme.example"),
        operator_event("apikey", "apikey.create", key["id"]),
        operator_event("tenant", "tenant.update", tenant.name, plan="business"),
        operator_event("tenant", "tenant.update", tenant.name, enforceLogLimit=False),
        operator_event("apikey", "apikey.create", issued["apiKey"]["id"]),
        operator_event("member", "member.create", "dev@acme.example"),
    ]
    for event in await events(deployment.client, tenant):
        # Not requests: no source address, request id or answered status.
        assert not {"sourceIp", "requestId", "status"} & set(event), event
