"""status.observedGeneration, and conditions that show a new desired version at once."""

from __future__ import annotations

from typing import Any

import httpx

from tests.cluster.polling import poll
from tests.cluster.test_update import patch, running_cluster
from tests.factories import Factory
from tests.http_client import bearer


def condition(body: Any, kind: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        entry for entry in body["status"]["conditions"] if entry["type"] == kind
    ]
    assert len(found) == 1, found
    return found[0]


async def test_a_version_patch_shows_the_upgrade_pending_until_the_reconciler_finishes(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    running = await running_cluster(client, tenant, version="1.32")
    assert condition(running, "VersionUpToDate")["status"] == "True"
    status = running["status"]
    assert isinstance(status, dict)
    observed_before = status["observedGeneration"]
    assert observed_before >= 1

    patched = await patch(client, tenant, "dev", {"version": "1.33"})
    assert patched.status_code == 200, patched.text
    # The answer is built before the change commits: no reconciler can have acted on it.
    answered = patched.json()
    assert answered["version"] == "1.33"
    assert answered["status"]["observedGeneration"] == observed_before
    pending = condition(answered, "VersionUpToDate")
    assert (pending["status"], pending["reason"]) == ("False", "UpgradePending")
    assert pending["message"].endswith("desired 1.33")
    # A read right after is pending or in progress, or (only once upgraded) up to date.
    read = (await client.get(f"{tenant.path}/clusters/dev", headers=headers)).json()
    now = condition(read, "VersionUpToDate")
    if now["status"] == "True":
        assert read["status"]["kubernetesVersion"].startswith("v1.33.")
    else:
        assert now["reason"] in {"UpgradePending", "UpgradeInProgress"}
        assert now["message"].endswith("desired 1.33")

    def upgraded(response: httpx.Response) -> bool:
        return bool(condition(response.json(), "VersionUpToDate")["status"] == "True")

    done = (await poll(client, f"{tenant.path}/clusters/dev", headers, upgraded, "upgrade")).json()
    assert done["status"]["kubernetesVersion"].startswith("v1.33.")
    assert done["status"]["observedGeneration"] > observed_before
    assert "haEnabledAt" not in done["status"]


async def test_a_patch_without_reconcilers_leaves_observed_generation_behind(
    paused_client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    headers = bearer(tenant.admin_key)
    await factory.cluster_row(tenant.id, "dev")  # Running v1.33.4, never reconciled
    before = (await paused_client.get(f"{tenant.path}/clusters/dev", headers=headers)).json()
    assert before["status"]["observedGeneration"] == 0
    patched = await paused_client.patch(
        f"{tenant.path}/clusters/dev", json={"version": "1.34"}, headers=headers
    )
    assert patched.status_code == 200, patched.text
    read = (await paused_client.get(f"{tenant.path}/clusters/dev", headers=headers)).json()
    for body in (patched.json(), read):
        assert body["status"]["observedGeneration"] == 0
        pending = condition(body, "VersionUpToDate")
        assert pending["status"] == "False"
        assert pending["reason"] == "UpgradePending"
        assert pending["message"] == "running v1.33.4, desired 1.34"
        assert pending["lastTransitionTime"].endswith("Z")
