"""An append sends the same few statements whatever the number of its events and tenants:
built once, and on PostgreSQL with texts that do not change with the rows (one prepared
statement each), so an audited write pays no SQL compilation (bench/history.md, round 19)."""

from __future__ import annotations

from tenantplane.db.engine import Database
from tenantplane.event.log import append_all, platform_event
from tests.factories import Factory
from tests.statements import statements_sent


async def _sent_by_append(database: Database, tenant_ids: list[int], per_tenant: int) -> list[str]:
    drafts = [
        (tenant_id, platform_event("cluster.phase_changed", "cluster", f"c{index}"))
        for tenant_id in tenant_ids
        for index in range(per_tenant)
    ]
    async with database.transaction() as session:
        with statements_sent(database) as sent:
            stored = await append_all(session, drafts)
    assert len(stored) == len(drafts)
    return sent


async def test_an_append_sends_four_statements_whatever_its_size(
    database: Database, factory: Factory
) -> None:
    tenants = [(await factory.tenant()).id for _ in range(3)]
    one = await _sent_by_append(database, tenants[:1], 1)
    many = await _sent_by_append(database, tenants, 4)
    # The chain heads locked, the events inserted, the heads moved, the webhooks made due
    # (SQLite: after the transaction's BEGIN IMMEDIATE).
    one, many = ([text for text in sent if not text.startswith("BEGIN")] for sent in (one, many))
    assert len(one) == len(many) == 4
    if database.engine.dialect.name == "postgresql":
        assert one == many
