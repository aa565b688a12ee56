"""Polled lists answer kept documents until a resource changes (http/documents.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, NamedTuple

import httpx
import orjson
import pytest
from fastapi import FastAPI

from tenantplane.cluster.models import ClusterPhase
from tenantplane.cluster.repository import cluster_listing_of, read_clusters
from tenantplane.db.reads import Reads
from tenantplane.http.documents import EncodedDocuments, Listing, Reader
from tests.factories import Factory
from tests.http_client import bearer, plain_reads_of


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

    with plain_reads_of(app, "clusters") as statements:
        first = await client.get(path, headers=headers)
    assert phases(first) == {"web": "Running", "api": "Running"}
    # The digest and the versions (one snapshot), then both clusters in full.
    assert [digest_or_not(statement) for statement in statements] == [True, False, False]

    with plain_reads_of(app, "clusters") as statements:
        again = await client.get(path, headers=headers)
    assert again.content == first.content
    # The digest only: the same rows, the same page.
    assert [digest_or_not(statement) for statement in statements] == [True]

    await factory.set_cluster_phase(web, ClusterPhase.failed)
    with plain_reads_of(app, "clusters") as statements:
        changed = await client.get(path, headers=headers)
    assert phases(changed) == {"web": "Failed", "api": "Running"}
    # The digest differs: digest and versions again, then the changed cluster alone.
    assert [digest_or_not(statement) for statement in statements] == [True, True, False, False]
    single = await client.get(f"{path}/web", headers=headers)
    assert changed.json()["items"][0] == single.json()
    with plain_reads_of(app, "clusters") as statements:
        assert (await client.get(path, headers=headers)).content == changed.content
    assert len(statements) == 1


def names_reader(reads: Reads, tenant_id: int) -> Reader:
    """A list's reader of the tenant's clusters whose document is their name alone."""

    async def read(ids: list[int]) -> Iterable[tuple[Any, dict[str, Any]]]:
        return [(row, {"name": row.name}) for row in await read_clusters(reads, tenant_id, ids)]

    return read


def digest_or_not(statement: str) -> bool:
    """Whether a statement is a list's digest (db/reads.digest_of)."""
    return "string_agg(" in statement or "group_concat(" in statement


async def test_each_page_of_a_list_is_kept_apart_and_follows_every_change(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    rows = [await factory.cluster_row(tenant.id, name) for name in ("a", "b", "c")]
    path, headers = f"{tenant.path}/clusters", bearer(tenant.readonly_key)

    async def walk() -> list[list[str]]:
        pages, token = [], None
        while True:
            query = {"limit": "2"} | ({"continue": token} if token else {})
            answer = await client.get(path, headers=headers, params=query)
            assert answer.status_code == 200, answer.text
            pages.append([item["name"] for item in answer.json()["items"]])
            token = answer.json().get("continue")
            if token is None:
                return pages

    assert await walk() == [["a", "b"], ["c"]]
    with plain_reads_of(app, "clusters") as statements:
        assert await walk() == [["a", "b"], ["c"]]
        assert (await client.get(path, headers=headers)).status_code == 200
    # Two kept pages, their digest each; the whole list, not kept yet: the digest and the
    # versions (each document was kept by the pages).
    assert [digest_or_not(statement) for statement in statements] == [True, True, True, False]

    await factory.delete_cluster(rows[1])
    await factory.cluster_row(tenant.id, "d")
    assert await walk() == [["a", "c"], ["d"]]
    assert phases(await client.get(path, headers=headers)) == {
        "a": "Running",
        "c": "Running",
        "d": "Running",
    }


async def test_a_page_whose_resource_went_away_before_its_read_is_answered_not_kept(
    app: FastAPI, factory: Factory
) -> None:
    """The versions listed a cluster that was deleted before its document was read: the
    page answered leaves it out, and is not kept under a digest that still names it."""
    tenant = await factory.tenant()
    await factory.cluster_row(tenant.id, "web")
    gone = await factory.cluster_row(tenant.id, "api")
    reads = app.state.database.reads
    documents = EncodedDocuments()

    read = names_reader(reads, tenant.id)

    async def read_after_a_deletion(ids: list[int]) -> Iterable[tuple[Any, dict[str, Any]]]:
        await factory.delete_cluster(gone)
        return await read(ids)

    def listing(reader: Reader) -> Listing:
        return cluster_listing_of(tenant.id, reader, lambda row: (row.id,))

    first, _ = await documents.page(reads, listing(read_after_a_deletion))
    assert orjson.loads(orjson.dumps(first)) == [{"name": "web"}]
    # Nothing kept of that page: the digest and the versions again (web's document, of its
    # listed version, was kept).
    with plain_reads_of(app, "clusters") as statements:
        second, _ = await documents.page(reads, listing(read))
    assert orjson.loads(orjson.dumps(second)) == [{"name": "web"}]
    assert [digest_or_not(statement) for statement in statements] == [True, False]
    with plain_reads_of(app, "clusters") as statements:
        assert (await documents.page(reads, listing(read)))[0] == second
    assert len(statements) == 1


@pytest.mark.parametrize(
    "bound", [{"max_pages": 2}, {"max_documents": 5}], ids=["pages", "documents"]
)
async def test_kept_pages_are_bounded(
    app: FastAPI, factory: Factory, bound: dict[str, int]
) -> None:
    """At most so many pages, and so many documents in them (two clusters a list)."""
    reads = app.state.database.reads
    documents = EncodedDocuments(**bound)
    for _ in range(3):
        tenant_id = (await factory.tenant()).id
        await factory.cluster_row(tenant_id, "web")
        await factory.cluster_row(tenant_id, "api")
        read = names_reader(reads, tenant_id)
        await documents.page(reads, cluster_listing_of(tenant_id, read, lambda row: (row.id,)))
    assert documents.pages_kept == 2


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


class Listed(NamedTuple):
    id: int
    resource_version: int
    name: str
    created_at: str


async def test_a_resource_changed_between_its_listing_and_its_read_is_answered_not_kept() -> None:
    documents = EncodedDocuments()
    reads: list[list[int]] = []
    current = {"resource_version": 2}

    async def read(ids: list[int]) -> list[tuple[Any, dict[str, Any]]]:
        reads.append(ids)
        row = Listed(7, current["resource_version"], "web", "2026-11-24 04:00:00")
        return [(row, {"name": "web", "resourceVersion": str(row.resource_version)})]

    listed_v1 = [Listed(7, 1, "web", "2026-11-24 04:00:00")]
    # Listed at version 1, read at version 2: the newer document is answered...
    answered, complete = await documents.listing("cluster", listed_v1, read)
    assert orjson.loads(orjson.dumps(answered)) == [{"name": "web", "resourceVersion": "2"}]
    # ...but not kept under version 1's key, nor under version 2's (not listed yet), and
    # the listing is not of its listed versions (no page of it may be kept).
    assert len(documents) == 0
    assert not complete
    listed_v2 = [Listed(7, 2, "web", "2026-11-24 04:00:00")]
    assert (await documents.listing("cluster", listed_v2, read))[1]
    assert len(documents) == 1
    assert (await documents.listing("cluster", listed_v2, read))[1]
    assert reads == [[7], [7]]  # the third listing was answered from the kept document


async def test_concurrent_polls_of_a_cold_list_read_its_documents_once(
    app: FastAPI, client: httpx.AsyncClient, factory: Factory
) -> None:
    """A burst of polls after a start (or of a list nobody read yet) does not each read and
    encode the whole list: the first reads it, the others wait for its documents."""
    tenant = await factory.tenant()
    for index in range(20):
        await factory.cluster_row(tenant.id, f"c-{index:02d}")
    path, headers = f"{tenant.path}/clusters", bearer(tenant.readonly_key)

    with plain_reads_of(app, "clusters") as statements:
        answers = await asyncio.gather(*(client.get(path, headers=headers) for _ in range(8)))
    assert {answer.content for answer in answers} == {answers[0].content}
    assert len(phases(answers[0])) == 20
    # One read of the clusters in full (each listing also reads the digest, and the
    # versions unless another's page was kept by then).
    assert len([statement for statement in statements if "clusters.type" in statement]) == 1


@pytest.mark.parametrize("leader_ends", ["fails", "is cancelled"])
async def test_polls_waiting_on_a_read_that_did_not_end_well_read_for_themselves(
    leader_ends: str,
) -> None:
    documents = EncodedDocuments()
    listed = [Listed(7, 1, "web", "2026-11-24 04:00:00")]
    first_read_started, release_first = asyncio.Event(), asyncio.Event()
    reads = 0

    async def read(ids: list[int]) -> list[tuple[Any, dict[str, Any]]]:
        nonlocal reads
        reads += 1
        if reads == 1:
            first_read_started.set()
            await release_first.wait()  # or cancelled here (the client went away)
            raise ConnectionError("the database went away")
        return [(listed[0], {"name": "web"})]

    first = asyncio.create_task(documents.listing("cluster", listed, read))
    await first_read_started.wait()
    waiting = asyncio.create_task(documents.listing("cluster", listed, read))
    await asyncio.sleep(0)
    if leader_ends == "fails":
        release_first.set()
    else:
        first.cancel()
    # Another request's end is not the waiter's: it read the document itself.
    assert orjson.loads(orjson.dumps((await waiting)[0])) == [{"name": "web"}]
    with pytest.raises(ConnectionError if leader_ends == "fails" else asyncio.CancelledError):
        await first
    assert reads == 2
    assert len(documents) == 1
