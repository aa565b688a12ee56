"""The reconcilers of `serve` take their connections from a pool of their own: requests that
hold (or queue on) the request pool do not hold back provisioning."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from tenantplane.db.engine import Database
from tests.cluster.polling import phase_is, poll
from tests.conftest import make_settings
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app


async def test_a_cluster_reaches_running_while_requests_hold_the_whole_request_pool(
    database: Database, database_url: str, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    settings = make_settings(
        database_url, tmp_path, db_pool_size=1, db_max_overflow=0, db_reconcile_pool_size=2
    )
    async with running_app(settings) as app, api_client(app) as client:
        created = await client.post(
            f"{tenant.path}/clusters", json={"name": "c1"}, headers=bearer(tenant.admin_key)
        )
        assert created.status_code == 201, created.text
        # The request pool's one connection, taken as a slow request would take it (a read:
        # on SQLite it holds no write lock that the reconcilers would wait on).
        async with app.state.database.reader() as held:
            await held.execute(text("SELECT 1"))
            # Polls are plain reads, which use neither pool.
            await poll(
                client,
                f"{tenant.path}/clusters/c1",
                bearer(tenant.admin_key),
                phase_is("Running"),
                "Running with the request pool taken",
                deadline=30,
            )
