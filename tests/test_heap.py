"""A serving process keeps what its startup built out of the garbage collector's full
collections (tenantplane/heap.py), and gives it back when it stops."""

from __future__ import annotations

import gc
from pathlib import Path

from tenantplane.config import Settings
from tests.http_client import BASE_URL, api_client, running_app


async def test_a_serving_app_keeps_its_startup_out_of_full_collections(
    settings: Settings, tmp_path: Path
) -> None:
    gc.unfreeze()  # whatever an earlier test left: this one starts from nothing frozen
    async with running_app(settings) as app:
        frozen = gc.get_freeze_count()
        # Modules, routes, mappers: far more than a few objects.
        assert frozen > 10_000
        async with api_client(app) as client:
            assert (await client.get(f"{BASE_URL}/healthz")).status_code == 200
        gc.collect()  # a full collection while serving leaves them where they are
        # (less the few freed since by their reference counts, as any object is)
        assert gc.get_freeze_count() > frozen - 1_000
    assert gc.get_freeze_count() == 0
