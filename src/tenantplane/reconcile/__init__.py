"""The reconciler framework (leases, fetcher, runner, wake-up hints); see docs/reconcilers.md."""

from tenantplane.reconcile.fence import UNFENCED, Fence, LeaseLost, WriteFence
from tenantplane.reconcile.hints import wake_after_commit, wake_now
from tenantplane.reconcile.lease import Lease, Leased, LeaseGuard, ready_condition, released
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.runner import ReconcilerRunner
from tenantplane.reconcile.supervisor import Supervisor

__all__ = [
    "UNFENCED",
    "Fence",
    "Lease",
    "LeaseGuard",
    "LeaseLost",
    "Leased",
    "Reconciler",
    "ReconcilerRunner",
    "Supervisor",
    "WriteFence",
    "ready_condition",
    "released",
    "wake_after_commit",
    "wake_now",
]
