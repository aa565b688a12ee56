"""The server of `tenantplane serve` keeps what its startup built out of the garbage
collector's full collections while it serves (tenantplane/heap.py), and gives it back when
it stops; an app started without it (as the tests start them) freezes nothing."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import httpx
import pytest

from tenantplane.config import Settings
from tenantplane.server import server_for
from tests.http_client import running_app


@pytest.fixture
def nothing_frozen() -> Iterator[None]:
    """The test starts with nothing frozen (whatever earlier tests left, tests/conftest.py)
    and the process's heap is frozen again after it, without a full collection: the one
    before the next test would otherwise scan all that the earlier tests had left (half a
    minute in a test process late in the run)."""
    gc.unfreeze()
    yield
    gc.freeze()


@pytest.mark.usefixtures("nothing_frozen")
async def test_the_server_keeps_its_startup_out_of_full_collections_while_it_serves(
    settings: Settings,
) -> None:
    server = server_for(settings, "127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not serving.done(), "the server did not start"
            await asyncio.sleep(0.01)
        frozen = gc.get_freeze_count()
        # Modules, routes, mappers: far more than a few objects.
        assert frozen > 10_000
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{server.address()}/healthz")).status_code == 200
        gc.collect()  # a full collection while serving leaves them where they are
        # (less the few freed since by their reference counts, as any object is)
        assert gc.get_freeze_count() > frozen - 1_000
    finally:
        server.should_exit = True
        await serving
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("nothing_frozen")
async def test_an_app_alone_freezes_nothing(settings: Settings) -> None:
    async with running_app(settings):
        assert gc.get_freeze_count() == 0
