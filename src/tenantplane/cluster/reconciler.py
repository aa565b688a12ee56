"""The cluster reconciler (in progress)."""

from __future__ import annotations

from typing import Any

from tenantplane.reconcile.registry import ReconcileContext
from tenantplane.reconcile.runner import Reconciler


def build_cluster_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    return None
