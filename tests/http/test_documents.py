"""Polled lists answer kept documents until a resource changes (http/documents.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import event

from tenantplane.cluster.models import ClusterPhase
from tests.factories import Factory
from tests.http_client import bearer


@contextmanager
def cluster_reads(app: FastAPI) -> Iterator[list[str]]:
    """The statements the app's plain reads send about clusters, while the block runs."""
    seen: list[str] = []

    def record(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if "FROM clusters" in statement:
            seen.append(statement)

    reads_engine = app.state.database.reads.engine
    engine = getattr(reads_engine, "sync_engine", reads_engine)
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def phases(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    return {item["name"]: item["status"]["phase"] for item in answer.json()["items"]}


async def test_a_polled_cluster_list_reads_only_what_changed(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    web = await factory.cluster_row(tenant.id, "web")
    await factory.cluster_row(tenant.id, "api")
    path, headers = f"{tenant.path}/clusters", bearer(tenant.readonly_key)

    with cluster_reads(app) as statements:
        first = await client.get(path, headers=headers)
    assert phases(first) == {"web": "Running", "api": "Running"}
    assert len(statements) == 2  # the versions, then both clusters in full

    with cluster_reads(app) as statements:
        again = await client.get(path, headers=headers)
    assert again.content == first.content
    assert len(statements) == 1  # the versions only: nothing changed

    await factory.set_cluster_phase(web, ClusterPhase.failed)
    with cluster_reads(app) as statements:
        changed = await client.get(path, headers=headers)
    assert phases(changed) == {"web": "Failed", "api": "Running"}
    assert len(statements) == 2
    single = await client.get(f"{path}/web", headers=headers)
    assert changed.json()["items"][0] == single.json()


async def test_a_cluster_made_again_under_its_name_is_never_answered_from_its_predecessor(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    path, headers = f"{tenant.path}/clusters", bearer(tenant.readonly_key)
    web = await factory.cluster_row(tenant.id, "web")
    assert phases(await client.get(path, headers=headers)) == {"web": "Running"}
    await factory.delete_cluster(web)
    assert phases(await client.get(path, headers=headers)) == {}
    await factory.cluster_row(tenant.id, "web", phase=ClusterPhase.provisioning)
    assert phases(await client.get(path, headers=headers)) == {"web": "Provisioning"}
