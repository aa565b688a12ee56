"""Platform events of alerting: the backend's answer to a stored configuration
(``alerting.applied``, ``alerting.refused`` with its reason), recorded by the alerting
reconciler with the outcome, once per answer; never a credential of the configuration."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.alerting.reconciler import AlertingReconciler
from tenantplane.db.engine import Database
from tenantplane.providers.alerting.base import BackendRejected, DatabaseBackend, Target
from tenantplane.reconcile.runner import ReconcilerRunner
from tests.alerting.applied import applied, settled
from tests.alerting.conftest import fake_mimir, mimir_client  # noqa: F401 (fixtures)
from tests.conftest import make_settings
from tests.event.stream import events
from tests.factories import Factory, TenantFixture
from tests.fakes.mimir import FakeMimir
from tests.http_client import api_client, bearer, running_app

# A Slack webhook URL is a credential (alerting/redaction.py).
TOKEN_URL = "https://hooks.slack.example.com/services/T000/B000/s3cr3t-t0k3n"
SLACK = {"slack_configs": [{"api_url": TOKEN_URL, "channel": "#ops"}]}


class Refusing(DatabaseBackend):
    """The database backend, refusing while ``refusal`` is set, its answer quoting the
    configuration (as a backend's validation error may)."""

    refusal: str | None = None

    async def apply(self, target: Target, document: dict[str, Any]) -> None:
        if self.refusal is not None:
            receivers = document.get("receivers", [])
            raise BackendRejected(f"{self.refusal}: {receivers}")
        await super().apply(target, document)


@pytest.fixture
async def paused(
    database: Database, database_url: str, tmp_path: Path
) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    async with running_app(settings) as app, api_client(app) as client:
        yield client


def alerting_event(action: str, **data: Any) -> dict[str, Any]:
    return {
        "type": "platform",
        "action": action,
        "resource": {"kind": "alerting", "name": "config"},
        "actor": {"kind": "system"},
        "data": data,
    }


async def platform_events(client: httpx.AsyncClient, tenant: TenantFixture) -> list[dict[str, Any]]:
    found = await events(client, tenant, type="platform", kind="alerting")
    shown = ("type", "action", "resource", "actor", "data")
    return [{key: event[key] for key in shown} for event in reversed(found)]


async def test_applied_and_refused_configurations_are_recorded_once_without_credentials(
    paused: httpx.AsyncClient, factory: Factory, database: Database
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    backend = Refusing()
    reconciler = AlertingReconciler(backend, database, factory.keys)
    runner = ReconcilerRunner(database, reconciler)

    put = await paused.put(f"{tenant.path}/alerting/receivers/ops", json=SLACK, headers=headers)
    assert put.status_code == 201, put.text
    first = int(put.headers["etag"].strip('"'))
    assert await runner.run_once() == 1
    assert await runner.run_once() == 0  # nothing due: nothing more recorded
    applied_first = alerting_event("alerting.applied", version=first, operation="apply")
    assert await platform_events(paused, tenant) == [applied_first]

    backend.refusal = "error validating Alertmanager config"
    route = {"receiver": "ops", "matchers": ['severity="page"']}
    put = await paused.put(f"{tenant.path}/alerting/routes/0", json=route, headers=headers)
    assert put.status_code == 201, put.text
    assert await runner.run_once() == 1
    assert await runner.run_once() == 0  # a refusal is not retried until the next change
    recorded = await platform_events(paused, tenant)
    assert recorded[0] == applied_first
    [refused] = recorded[1:]
    assert refused["action"] == "alerting.refused"
    assert refused["data"]["operation"] == "apply"
    assert refused["data"]["version"] > first
    assert refused["data"]["reason"].startswith("error validating Alertmanager config: ")
    assert "<secret>" in refused["data"]["reason"]
    for event in await events(paused, tenant):
        assert "s3cr3t-t0k3n" not in str(event)

    backend.refusal = None
    reset = await paused.delete(f"{tenant.path}/alerting/config", headers=headers)
    assert reset.status_code == 200, reset.text
    assert await runner.run_once() == 1
    [*_, removed] = await platform_events(paused, tenant)
    assert removed["action"] == "alerting.applied"
    assert removed["data"]["operation"] == "remove"


async def test_a_mimir_refusal_is_recorded_with_its_reason(
    mimir_client: httpx.AsyncClient,  # noqa: F811
    factory: Factory,
    fake_mimir: FakeMimir,  # noqa: F811
    database: Database,
) -> None:
    """The app's own reconcilers, against the loopback fake of Mimir."""
    tenant = await factory.tenant()
    await factory.alerting_credentials(tenant.name)
    headers = bearer(tenant.admin_key)
    hook = {"webhook_configs": [{"url": "https://hooks.example.com/ops"}]}
    path = f"{tenant.path}/alerting/receivers"
    put = await mimir_client.put(f"{path}/ops", json=hook, headers=headers)
    assert put.status_code == 201, put.text
    await applied(database, tenant.name)

    fake_mimir.max_config_size = 400  # Mimir's -alertmanager.max-config-size-bytes
    big = {"webhook_configs": [{"url": f"https://hooks.example.com/{'x' * 500}"}]}
    put = await mimir_client.put(f"{path}/big", json=big, headers=headers)
    assert put.status_code == 201, put.text
    status, error = await settled(database, tenant.name)
    assert status == "rejected"

    recorded = await platform_events(mimir_client, tenant)
    assert [entry["action"] for entry in recorded] == ["alerting.applied", "alerting.refused"]
    assert "too big" in error
    assert recorded[1]["data"]["reason"] == error[:1000]
