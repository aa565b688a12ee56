"""The reconcilers this application runs: every feature with asynchronous state lists its
factories here. ``serve`` (when ``TENANTPLANE_RUN_RECONCILERS`` is true) and
``tenantplane worker`` run them all.
"""

from __future__ import annotations

from typing import Any

from tenantplane.alerting.reconciler import build_alerting_reconciler
from tenantplane.billing.reconciler import (
    build_cycle_reconciler,
    build_event_reconciler,
    build_invoice_reconciler,
)
from tenantplane.cluster.reconciler import build_cluster_reconciler
from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.event.retention import build_retention_reconciler
from tenantplane.event.webhook.delivery import build_delivery_reconciler
from tenantplane.event.webhook.dispatcher import build_dispatcher
from tenantplane.reconcile import registry
from tenantplane.reconcile.metrics import ReconcileMetrics
from tenantplane.reconcile.registry import ReconcilerFactory
from tenantplane.reconcile.supervisor import Supervisor
from tenantplane.secret.reconciler import build_secret_reconciler
from tenantplane.warmup import configure_models

FACTORIES: tuple[ReconcilerFactory, ...] = (
    build_cluster_reconciler,
    build_invoice_reconciler,
    build_event_reconciler,
    build_cycle_reconciler,
    build_secret_reconciler,
    build_alerting_reconciler,
    build_retention_reconciler,
    build_dispatcher,
    build_delivery_reconciler,
)


def build_supervisor(
    settings: Settings,
    database: Database,
    metrics: ReconcileMetrics | None = None,
    shared: dict[str, Any] | None = None,
) -> Supervisor:
    """``shared``: clients the process already holds (the API's alerting backend under
    ``"alerting"``), so that the in-process reconcilers reuse their connections."""
    supervisor = registry.build_supervisor(settings, database, FACTORIES, metrics, shared)
    # After the build: it imports the models of the providers it chose (the simulator's).
    configure_models()
    return supervisor
