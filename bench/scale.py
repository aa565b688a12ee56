"""Cost as the work grows: (i) a filtered page of the event list with 10,000 and with 10
million events in the table, with the plan of its statement; (j) `tenantplane billing run`
for 10,000 and for 100,000 tenants, its time and peak memory. See bench/README.md."""

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
    case,
    cast,
    column,
    func,
    literal,
    select,
    text,
)

from bench import seed
from bench.load import Figures
from bench.server import CLI, Server
from tenantplane.event import repository as event_repository
from tenantplane.event.models import Event

if TYPE_CHECKING:
    from bench.__main__ import Options, Tenant

#: Other tenants whose events fill the table around the measured tenant's.
FILL_TENANTS = 10_000
SMALL_TABLE = 10_000
BIG_TABLE = 10_000_000
#: Rows of one INSERT … SELECT generate_series (one transaction each: progress, bounded WAL).
FILL_STEP = 1_000_000
MEASURED_EVENTS = 1_000
#: The measured tenant's filled events follow its own (``tenant create`` records a few).
MEASURED_FIRST_SEQ = 100
#: The actions the fill cycles through, with their resource kind: a quarter each.
FILL_ACTIONS = (
    ("audit", "cluster.create", "cluster"),
    ("platform", "cluster.phase_changed", "cluster"),
    ("audit", "secret.update", "secret"),
    ("platform", "secret.sync_failed", "secret"),
)
#: The measured page: a filter on one action (a quarter of the tenant's events), 100 a page.
EVENT_FILTER = {"action": "cluster.create"}
PAGE_LIMIT = 100


def _table(model: Any) -> Table:
    table: Table = model.__table__
    return table


def fill_events(engine: Engine, tenant: int, tenants: int, low: int, high: int, tag: str) -> None:
    """Events ``low`` … ``high - 1`` of a fill, made by PostgreSQL itself (generate_series)
    through the table's definition: event ``i`` belongs to tenant ``tenant + i % tenants``,
    at position ``MEASURED_FIRST_SEQ + i // tenants`` of its chain, a minute older than the
    one before it (all within the retention window), its action one of ``FILL_ACTIONS``;
    ``tag`` keeps the ids of two fills apart."""
    for start in range(low, high, FILL_STEP):
        series = (
            func.generate_series(start, min(start + FILL_STEP, high) - 1)
            .table_valued(column("i", Integer))
            .render_derived(name="series")
        )
        i = series.c.i
        seq = MEASURED_FIRST_SEQ + i // tenants
        kind = i % len(FILL_ACTIONS)
        type_, action, resource = (
            case(*((kind == n, literal(entry[part])) for n, entry in enumerate(FILL_ACTIONS)))
            for part in range(3)
        )
        moment = func.now() - func.make_interval(0, 0, 0, 0, 0, seq - MEASURED_FIRST_SEQ)
        event_id = literal(tag) + func.lpad(cast(i, String), 25, "0")
        body = func.json_build_object(
            "action",
            action,
            "actor",
            func.json_build_object("id", "ops@example.com", "kind", "member"),
            "id",
            event_id,
            "resource",
            func.json_build_object("kind", resource, "name", "cluster-000"),
            "seq",
            seq,
            "time",
            func.to_char(func.timezone("UTC", moment), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
            "type",
            type_,
        )
        columns: dict[str, Any] = {
            "tenant_id": tenant + i % tenants,
            "seq": seq,
            "id": event_id,
            "time": moment,
            "type": type_,
            "action": action,
            "resource_kind": resource,
            "resource_name": literal("cluster-000"),
            "actor_kind": literal("member"),
            "actor_id": literal("ops@example.com"),
            "body": cast(body, String),
            "hash": func.concat(func.md5(cast(i, String)), func.md5(event_id)),
        }
        rows = select(*(value.label(name) for name, value in columns.items())).select_from(series)
        with engine.begin() as connection:
            connection.execute(_table(Event).insert().from_select(list(columns), rows))


def _page_values(tenant_id: int) -> dict[str, Any]:
    return {**EVENT_FILTER, "tenant_id": tenant_id}


def explain(engine: Engine, tenant_id: int) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of the page's statement as the app's plain reads send it
    (event/repository.py, compiled by the engine's dialect), with the measured tenant's values."""
    # The page's size as a number: its parameter has no type to render a literal with.
    statement = event_repository._page_statement(frozenset(EVENT_FILTER)).limit(PAGE_LIMIT + 1)
    sql = str(
        statement.params(_page_values(tenant_id)).compile(
            dialect=engine.dialect, compile_kwargs={"literal_binds": True}
        )
    )
    with engine.connect() as connection:
        lines = connection.execute(text(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")).scalars()
        return "\n".join(lines)


def event_list(
    engine: Engine,
    env: dict[str, str],
    options: Options,
    tenant: Tenant,
    emit: Callable[[str], None],
    drive_with: Callable[[Server], Callable[..., Figures]],
    row: Callable[[Figures, Figures | None, str], str],
) -> None:
    """(i) a filtered page of the measured tenant's 1,000 events with 10,000 events in the
    table, then again once other tenants' events have filled it to 10 million; the plans."""
    measured = seed.tenant_id(engine, tenant.name)
    fill_events(engine, measured, 1, 0, MEASURED_EVENTS, "m")
    others = seed.seed_tenants(
        engine, f"fill-{uuid.uuid4().hex[:4]}", FILL_TENANTS, datetime.now(UTC)
    )
    fill_events(engine, others[0], FILL_TENANTS, 0, SMALL_TABLE - MEASURED_EVENTS, "f")
    analyze(engine)
    small = _measure(engine, env, options, tenant, drive_with, "10,000 events")
    emit(row(small[0], small[1], "10,000 events in the table"))
    started = time.monotonic()
    fill_events(
        engine,
        others[0],
        FILL_TENANTS,
        SMALL_TABLE - MEASURED_EVENTS,
        BIG_TABLE - MEASURED_EVENTS,
        "f",
    )
    analyze(engine)
    seeded = time.monotonic() - started
    big = _measure(engine, env, options, tenant, drive_with, "10 million events")
    ratio = big[0].p99_ms / small[0].p99_ms if small[0].p99_ms else float("nan")
    emit(
        row(
            big[0],
            big[1],
            f"10,000,000 events in the table (filled and analyzed in {seeded:.0f} s); "
            f"p99 10M/10k = {ratio:.2f} (target ≤ 1.5)",
        )
    )
    for label, plans in (("10,000", small[2]), ("10,000,000", big[2])):
        emit(f"\n(i) plan with {label} events in the table:\n\n```\n{plans}\n```")


def analyze(engine: Engine) -> None:
    """VACUUM ANALYZE after a bulk fill, as autovacuum would soon do: statistics for the
    planner, and a visibility map for index-only scans."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM ANALYZE events"))
        connection.execute(text("VACUUM ANALYZE tenants"))


def _measure(
    engine: Engine,
    env: dict[str, str],
    options: Options,
    tenant: Tenant,
    drive_with: Callable[[Server], Callable[..., Figures]],
    label: str,
) -> tuple[Figures, Figures, str]:
    """A fresh server (nothing cached of the earlier table), /healthz, then the page."""
    server = Server(env, options.workdir / "server-events.log", options.workers)
    query = "&".join(f"{key}={value}" for key, value in EVENT_FILTER.items())
    path = tenant.path(f"/events?{query}&limit={PAGE_LIMIT}")
    try:
        server.wait_ready()
        drive = drive_with(server)
        drive("warm-up", path, tenant.headers, seconds=1)
        baseline = drive("(a) GET /healthz", "/healthz")
        figures = drive(f"(i) a filtered page of events, {label}", path, tenant.headers)
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
