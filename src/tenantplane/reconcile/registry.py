"""How a process assembles its reconcilers: factories, and what they are given.

The framework knows no feature. The application lists its features' factories
(``tenantplane.reconcilers``) and hands them to ``build_supervisor``. A factory takes the
``ReconcileContext`` and returns a ``Reconciler`` (or None when the feature is disabled in
this deployment).

The context also holds what the reconcilers of one process share: a client built once
(``context.shared(key, build)``) and closed when the supervisor stops
(``context.close_on_stop(client.aclose)``), after the last row in hand is done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from contextlib import AsyncExitStack
from typing import Any, TypeVar

from tenantplane.config import Settings
from tenantplane.db.engine import Database
from tenantplane.reconcile.metrics import ReconcileMetrics
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.supervisor import Supervisor

T = TypeVar("T")


class ReconcileContext:
    """What every reconciler factory of one process is given."""

    def __init__(
        self, settings: Settings, database: Database, shared: dict[str, Any] | None = None
    ) -> None:
        self.settings = settings
        self.database = database
        # Values the process already has (the API's clients): used, never closed, here.
        self._shared: dict[str, Any] = dict(shared or {})
        self._closers = AsyncExitStack()

    def shared(self, key: str, build: Callable[[], T]) -> T:
        """The one value under ``key`` for this process, built on first use."""
        if key not in self._shared:
            self._shared[key] = build()
        value: T = self._shared[key]
        return value

    def close_on_stop(self, close: Callable[[], Awaitable[Any]]) -> None:
        """Call ``close`` when the reconcilers have stopped (last registered, first called)."""
        self._closers.push_async_callback(close)

    async def aclose(self) -> None:
        await self._closers.aclose()


ReconcilerFactory = Callable[[ReconcileContext], Reconciler[Any, Any] | None]


def build_supervisor(
    settings: Settings,
    database: Database,
    factories: Iterable[ReconcilerFactory],
    metrics: ReconcileMetrics | None = None,
    shared: dict[str, Any] | None = None,
) -> Supervisor:
    """A supervisor running what ``factories`` build; stopping it closes what they share
    (except what was handed in through ``shared``, which its owner closes). Its metrics go
    to ``metrics`` (the app's registry), or to a registry of its own."""
    context = ReconcileContext(settings, database, shared)
    reconcilers = [
        reconciler for factory in factories if (reconciler := factory(context)) is not None
    ]
    return Supervisor(
        database,
        reconcilers,
        idle_poll_seconds=settings.reconcile_idle_poll_seconds,
        on_stopped=context.aclose,
        metrics=metrics,
    )
