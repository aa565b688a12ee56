from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from tenantplane.db.engine import Database
from tests.db.leaks import raw_keys_in_postgres, raw_keys_in_sqlite
from tests.factories import Factory
from tests.http_client import bearer


async def test_issued_and_used_keys_are_stored_only_as_hashes(
    client: httpx.AsyncClient,
    factory: Factory,
    database: Database,
    database_url: str,
    tmp_path: Path,
) -> None:
    tenant = await factory.tenant()
    created = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "probe", "role": "admin"},
        headers=bearer(tenant.admin_key),
    )
    raw = created.json()["key"]
    assert (await client.get(tenant.path, headers=bearer(raw))).status_code == 200
    await client.get(
        tenant.path, headers=bearer(raw.replace(raw[-1], "0" if raw[-1] != "0" else "1"))
    )
    # The scan covers the database file and its write-ahead log.
    if database.is_sqlite:
        leaked = raw_keys_in_sqlite(Path(make_url(database_url).database or ""))
    else:
        leaked = raw_keys_in_postgres(database_url)
    assert leaked == []
    # The scanner does find a key where one is stored (so the empty result means something).
    probe = tmp_path / "probe.bin"
    probe.write_bytes(b"xx" + raw.encode() + b"yy")
    assert raw_keys_in_sqlite(probe) == [raw.encode()]
