"""Cost as the work grows: (i) the invoice list with 10,000 and with 10 million invoices in the
table, with the plans of its statements; (j) `tenantplane billing run` for 10,000 and for
100,000 tenants, its time and peak memory. See bench/README.md."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Engine,
    Integer,
    String,
    Table,
    cast,
    column,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.sql import Select

from bench import seed
from bench.load import Figures
from bench.server import CLI, Server
from tenantplane.billing import repository
from tenantplane.billing.models import Invoice, InvoiceLineItem

if TYPE_CHECKING:
    from bench.__main__ import Options, Tenant

#: Other tenants whose invoices fill the table around the measured tenant's 120.
FILL_TENANTS = 10_000
SMALL_TABLE = 10_000
BIG_TABLE = 10_000_000
#: Rows of one INSERT … SELECT generate_series (one transaction each: progress, bounded WAL).
FILL_STEP = 1_000_000
MEASURED_INVOICES = 120


def _table(model: Any) -> Table:
    table: Table = model.__table__
    return table


def fill_invoices(engine: Engine, first_tenant: int, low: int, high: int) -> None:
    """Invoices ``low`` … ``high - 1`` of the fill, made by PostgreSQL itself (generate_series)
    through the table's definition: invoice ``i`` is the ``i // FILL_TENANTS``-th period of
    tenant ``first_tenant + i % FILL_TENANTS``, counted back from a period that ends in ten
    days, so that no tenant has an ended period for the billing reconciler to close."""
    anchor = datetime.now(UTC) + timedelta(days=10)
    for start in range(low, high, FILL_STEP):
        series = (
            func.generate_series(start, min(start + FILL_STEP, high) - 1)
            .table_valued(column("i", Integer))
            .render_derived(name="series")
        )
        i = series.c.i
        back = func.make_interval(0, 0, 0, i // FILL_TENANTS * 30)
        period_start = literal(anchor - timedelta(days=30), Invoice.period_start.type) - back
        period_end = literal(anchor, Invoice.period_end.type) - back
        columns: dict[str, Any] = {
            "uid": func.md5(cast(i, String)),
            "tenant_id": first_tenant + i % FILL_TENANTS,
            "name": literal("fill-") + cast(i, String),
            "kind": literal("regular"),
            "plan": literal("starter"),
            "period_start": period_start,
            "period_end": period_end,
            "created_at": period_end,
            "phase": literal("Paid"),
            "currency": literal("USD"),
            "subtotal": literal("42.00"),
            "credits_applied": literal("0.00"),
            "tax": literal("0.00"),
            "total": literal("42.00"),
            "conditions": cast(literal("[]"), Invoice.conditions.type),
            "resource_version": literal(1),
        }
        rows = select(*(value.label(name) for name, value in columns.items())).select_from(series)
        with engine.begin() as connection:
            before = connection.execute(select(func.coalesce(func.max(Invoice.id), 0))).scalar()
            connection.execute(_table(Invoice).insert().from_select(list(columns), rows))
            connection.execute(_line_items_of_invoices_after(before))


def _line_items_of_invoices_after(invoice_id: Any) -> Any:
    """One line item for each invoice of id above ``invoice_id`` (the fill's new ones)."""
    items: dict[str, Any] = {
        "invoice_id": Invoice.id,
        "position": literal(0),
        "kind": literal("cluster"),
        "description": literal("cluster-000 control plane"),
        "cluster": literal("cluster-000"),
        "quantity": literal("720"),
        "unit": literal("hour"),
        "unit_price": literal("0.0583"),
        "amount": literal("42.00"),
    }
    rows = select(*(value.label(name) for name, value in items.items())).where(
        Invoice.id > invoice_id
    )
    return _table(InvoiceLineItem).insert().from_select(list(items), rows)


def explain(engine: Engine, tenant_id: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the list's statements as the app's plain reads send them
    (billing/repository.py, compiled by the engine's dialect), with the measured tenant's values."""
    with engine.connect() as connection:
        ids = [
            row.id
            for row in connection.execute(
                repository._INVOICE_VERSIONS, {"tenant_id": tenant_id}
            ).all()
        ][: repository._IDS_PER_READ]
        statements: list[tuple[str, Select[Any], dict[str, Any]]] = [
            ("versions", repository._INVOICE_VERSIONS, {"tenant_id": tenant_id}),
            ("invoices", repository._INVOICES, {"tenant_id": tenant_id, "ids": ids}),
            ("line items", repository._LINE_ITEMS, {"tenant_id": tenant_id, "ids": ids}),
        ]
        plans = []
        for name, statement, values in statements:
            sql = str(
                statement.params(values).compile(
                    dialect=engine.dialect, compile_kwargs={"literal_binds": True}
                )
            )
            lines = connection.execute(text(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")).scalars()
            plans.append(f"-- {name}\n" + "\n".join(lines))
    return "\n".join(plans)


def invoice_list(
    engine: Engine,
    env: dict[str, str],
    options: Options,
    tenant: Tenant,
    emit: Callable[[str], None],
    drive_with: Callable[[Server], Callable[..., Figures]],
    row: Callable[[Figures, Figures | None, str], str],
) -> None:
    """(i) the measured tenant's 120 invoices listed with 10,000 invoices in the table, then
    again once other tenants' invoices have filled it to 10 million; the plans of both."""
    measured = seed.tenant_id(engine, tenant.name)
    seed.seed_invoices(engine, measured, tenant.name, MEASURED_INVOICES)
    others = seed.seed_tenants(
        engine, f"fill-{uuid.uuid4().hex[:4]}", FILL_TENANTS, datetime.now(UTC)
    )
    fill_invoices(engine, others[0], 0, SMALL_TABLE - MEASURED_INVOICES)
    analyze(engine)
    small = _measure(engine, env, options, tenant, drive_with, "10,000 invoices")
    emit(row(small[0], small[1], "10,000 invoices in the table"))
    started = time.monotonic()
    fill_invoices(engine, others[0], SMALL_TABLE - MEASURED_INVOICES, BIG_TABLE - MEASURED_INVOICES)
    analyze(engine)
    seeded = time.monotonic() - started
    big = _measure(engine, env, options, tenant, drive_with, "10 million invoices")
    ratio = big[0].p99_ms / small[0].p99_ms if small[0].p99_ms else float("nan")
    emit(
        row(
            big[0],
            big[1],
            f"10,000,000 invoices in the table (filled and analyzed in {seeded:.0f} s); "
            f"p99 10M/10k = {ratio:.2f} (target ≤ 1.5)",
        )
    )
    for label, plans in (("10,000", small[2]), ("10,000,000", big[2])):
        emit(f"\n(i) plans with {label} invoices in the table:\n\n```\n{plans}\n```")


def analyze(engine: Engine) -> None:
    """VACUUM ANALYZE after a bulk fill, as autovacuum would soon do: statistics for the
    planner, and a visibility map for index-only scans."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE invoices"))
        connection.execute(text("VACUUM ANALYZE invoice_line_items"))
        connection.execute(text("VACUUM ANALYZE tenants"))


def _measure(
    engine: Engine,
    env: dict[str, str],
    options: Options,
    tenant: Tenant,
    drive_with: Callable[[Server], Callable[..., Figures]],
    label: str,
) -> tuple[Figures, Figures, str]:
    """A fresh server (no cache of the earlier table), /healthz, then the list."""
    server = Server(env, options.workdir / "server-invoices.log", options.workers)
    try:
        server.wait_ready()
        drive = drive_with(server)
        drive("warm-up", tenant.path("/invoices"), tenant.headers, seconds=1)
        baseline = drive("(a) GET /healthz", "/healthz")
        figures = drive(f"(i) list 120 invoices, {label}", tenant.path("/invoices"), tenant.headers)
    finally:
        server.stop()
    return figures, baseline, explain(engine, seed.tenant_id(engine, tenant.name))


def billing_at_scale(url: str, env: dict[str, str], tenants: int) -> tuple[float, float, int, int]:
    """(j) `tenantplane billing run` closing one period for ``tenants`` tenants (one cluster
    each, seeded as (g) seeds them): seconds, the process's CPU seconds (on a shared machine
    its own cost, where the seconds include waiting for the cores), invoices issued, and its
    peak resident memory in KiB (ru_maxrss; both from its rusage, bench/rusage.py)."""
    engine = seed.sync_engine(url)
    start = datetime.now(UTC) - timedelta(days=40)
    ids = seed.seed_tenants(engine, "bill", tenants, start)
    clusters = seed.seed_clusters(engine, ids, 1, start)
    seed.seed_history(engine, clusters, start)
    del clusters
    engine.dispose()
    data = Path(env["TENANTPLANE_DATA_DIR"])
    output, log, usage = (data / f"billing-{tenants}.{kind}" for kind in ("json", "log", "rusage"))
    command = [sys.executable, "-m", "bench.rusage", str(usage), *CLI, "billing", "run", "--json"]
    with output.open("wb") as sink, log.open("wb") as errors:
        began = time.monotonic()
        subprocess.run(command, env=env, stdout=sink, stderr=errors, check=True)
        took = time.monotonic() - began
    issued = len(json.loads(output.read_text()).get("issued", []))
    figures = json.loads(usage.read_text())
    return took, float(figures["cpu_seconds"]), issued, int(figures["maxrss_kib"])
