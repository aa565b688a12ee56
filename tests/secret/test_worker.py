"""Secrets synced by a separate `tenantplane worker` process while the API runs none: all
state the sync needs (desired targets, simulated copies) lives in the shared database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tenantplane.db.engine import Database
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app
from tests.secret.support import copies_in, target_statuses, wait_for_phase


@contextmanager
def worker_process(database_url: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "TENANTPLANE_DATABASE_URL": database_url,
        "TENANTPLANE_SECRET_KEY_FILE": str(tmp_path / "worker-secret.key"),
        # Wake-up hints do not cross processes: the worker finds new work by polling.
        "TENANTPLANE_RECONCILE_IDLE_POLL_SECONDS": "0.1",
        "TENANTPLANE_SECRET_RESYNC_SECONDS": "0.2",
        "TENANTPLANE_SECRET_RETRY_SECONDS": "0.2",
    }
    env.pop("TENANTPLANE_VAULT_ADDR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tenantplane", "worker"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_a_worker_process_syncs_and_removes_copies(
    factory: Factory, database: Database, database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, tmp_path, run_reconcilers=False)
    tenant = await factory.tenant()
    prod = await factory.cluster_row(tenant.id, "prod")
    with worker_process(database_url, tmp_path) as worker:
        async with running_app(settings) as app, api_client(app) as client:
            headers = bearer(tenant.admin_key)
            created = await client.post(
                f"{tenant.path}/secrets",
                json={
                    "name": "app",
                    "secretPath": "apps/app",
                    "sync": [{"cluster": "prod", "namespace": "a"}],
                },
                headers=headers,
            )
            assert created.status_code == 201
            path = f"{tenant.path}/secrets/app"
            body = await wait_for_phase(client, path, tenant.admin_key, "Synced")
            assert target_statuses(body) == [("prod", "a", "app", "Synced", "Synced")]
            assert await copies_in(database, prod.uid) == {("a", "app")}

            patched = await client.patch(path, json={"sync": []}, headers=headers)
            assert patched.status_code == 200
            await wait_for_phase(client, path, tenant.admin_key, "Synced")
            assert await copies_in(database, prod.uid) == set()
        assert worker.poll() is None, "the worker exited early"
    assert worker.returncode == 0
