"""Which reconcilers a process runs: every feature lists its factory here.

A factory takes the ``ReconcileContext`` and returns a ``Reconciler`` (or None when the
feature is disabled in this deployment). ``serve`` (when ``TENANTPLANE_RUN_RECONCILERS`` is
true) and ``tenantplane worker`` run them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.reconcile.runner import Reconciler, Supervisor


@dataclass(frozen=True)
class ReconcileContext:
    settings: Settings
    database: Database


ReconcilerFactory = Callable[[ReconcileContext], Reconciler[Any, Any] | None]


def reconciler_factories() -> tuple[ReconcilerFactory, ...]:
    # Imported here: features import the framework, the framework must not import them early.
    from tenantplane.billing.reconciler import (
        build_cycle_reconciler,
        build_event_reconciler,
        build_invoice_reconciler,
    )
    from tenantplane.cluster.reconciler import build_cluster_reconciler
    from tenantplane.secret.reconciler import build_secret_reconciler

    return (
        build_cluster_reconciler,
        build_invoice_reconciler,
        build_event_reconciler,
        build_cycle_reconciler,
        build_secret_reconciler,
    )


def build_supervisor(settings: Settings, database: Database) -> Supervisor:
    context = ReconcileContext(settings, database)
    reconcilers = [
        reconciler
        for factory in reconciler_factories()
        if (reconciler := factory(context)) is not None
    ]
    return Supervisor(database, reconcilers, idle_poll_seconds=settings.reconcile_idle_poll_seconds)
