"""Prometheus metrics of the reconcilers a process runs (docs/operations.md, "Metrics to watch").

Counters and the step histogram are updated as the runners work; the queue depth and the
rows in progress are read when metrics are scraped (``Supervisor.refresh_metrics``), so a
scrape shows the table as it is, not as it was at the last step.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    gc_collector,
    platform_collector,
    process_collector,
)

STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


def register_runtime_collectors(registry: CollectorRegistry) -> None:
    """The process (CPU, memory, open files) and Python (version, GC) collectors, which
    prometheus-client registers only on its global registry."""
    process_collector.ProcessCollector(registry=registry)
    platform_collector.PlatformCollector(registry=registry)
    gc_collector.GCCollector(registry=registry)


class ReconcileMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.steps = Counter(
            "tenantplane_reconcile_steps",
            "Reconcile steps run (a leased row loaded, acted on and applied), by reconciler.",
            ["reconciler"],
            registry=self.registry,
        )
        self.failures = Counter(
            "tenantplane_reconcile_failures",
            "Reconcile steps that raised (the row is retried after a backoff), by reconciler.",
            ["reconciler"],
            registry=self.registry,
        )
        self.takeovers = Counter(
            "tenantplane_reconcile_lease_takeovers",
            "Rows leased while an expired lease of another owner was still on them (its "
            "process died, froze or overran the lease), by reconciler.",
            ["reconciler"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "tenantplane_reconcile_step_duration_seconds",
            "Duration of reconcile steps (load, act, apply), failed ones included.",
            ["reconciler"],
            registry=self.registry,
            buckets=STEP_BUCKETS,
        )
        self.queue_depth = Gauge(
            "tenantplane_reconcile_queue_depth",
            "Rows due now that no live lease holds (waiting for a runner), by reconciler; "
            "read from the database at scrape time, the same in every process.",
            ["reconciler"],
            registry=self.registry,
            # serve --workers N: written by its one reconcilers process (tenantplane.metrics).
            multiprocess_mode="mostrecent",
        )
        self.in_progress = Gauge(
            "tenantplane_reconcile_rows_in_progress",
            "Rows this process is working on now, by reconciler.",
            ["reconciler"],
            registry=self.registry,
            multiprocess_mode="mostrecent",
        )

    def declare(self, reconciler: str) -> None:
        """Series at zero from the start, so that rates and alerts see the first event."""
        for family in (self.steps, self.failures, self.takeovers, self.duration):
            family.labels(reconciler)
        self.queue_depth.labels(reconciler)
        self.in_progress.labels(reconciler)

    @contextmanager
    def step(self, reconciler: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.duration.labels(reconciler).observe(time.perf_counter() - started)
            self.steps.labels(reconciler).inc()

    def steps_done(self, reconciler: str, rows: int, started: float) -> None:
        """``rows`` steps worked together since ``started`` (``time.perf_counter``), as
        ``step`` records one: each row's step lasted as long as their batch."""
        elapsed = time.perf_counter() - started
        duration = self.duration.labels(reconciler)
        for _ in range(rows):
            duration.observe(elapsed)
        self.steps.labels(reconciler).inc(rows)
