"""The delivery reconciler: sends each delivery, signed, and records every attempt.

One leased delivery is one attempt: ``load`` reads it with its webhook's URL and secrets,
``act`` judges the destination's addresses (destination.py), holds the lease and POSTs the
payload with no session open (10 s at most, redirects not followed; 2xx is success),
``apply`` records the attempt and schedules the next (schedule.py) or ends the delivery.
The lease (60 s) is well above the attempt's 10 s, and a heartbeat renews it while the
attempt runs. A worker killed mid-attempt loses nothing: its lease lapses, and another
worker makes the attempt again, with the same ``webhook-id`` (at least once; that one
delivery may arrive twice).

A failed attempt starts or continues its webhook's run of failures (``failing_since``); one
made 3 days or more into the run disables the webhook and appends ``webhook.disabled`` to the
tenant's stream, in the same transaction. A success ends the run. A delivery whose webhook
is disabled is not sent: it ends ``cancelled``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

import httpx
import structlog
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.schema import Table

from tenantplane.db.base import rfc3339
from tenantplane.event.log import append, platform_event
from tenantplane.event.webhook import schedule, secrets
from tenantplane.event.webhook.destination import (
    DestinationRefused,
    Target,
    firewall_from_settings,
    resolve,
)
from tenantplane.event.webhook.models import DeliveryState, WebhookDelivery
from tenantplane.event.webhook.repository import WebhookRepository
from tenantplane.event.webhook.service import DELIVERY
from tenantplane.http.firewall import Firewall
from tenantplane.keys import KeyRing, decrypt_stored
from tenantplane.providers.http_pool import verifying_tls
from tenantplane.reconcile.fence import Fence
from tenantplane.reconcile.hints import wake_after_commit
from tenantplane.reconcile.lease import LeaseGuard
from tenantplane.reconcile.reconciler import Reconciler
from tenantplane.reconcile.registry import ReconcileContext

log = structlog.get_logger(__name__)

TIMEOUT_SECONDS = 10.0
LEASE_SECONDS = 60.0
# Attempts a delivery keeps in its history (the most recent).
MAX_HISTORY = 100
MAX_ERROR = 500
USER_AGENT = "tenantplane-webhooks/1"


@dataclass(frozen=True)
class Attempting:
    delivery_id: str
    webhook_id: str
    tenant_id: int
    message_id: str
    payload: str
    history: list[dict[str, Any]]
    created_at: datetime
    url: str
    enabled: bool
    secret: str
    previous_secret: str | None
    previous_secret_expires_at: datetime | None

    def signing(self, at: datetime) -> list[str]:
        """The secrets that sign an attempt at ``at``: the current one, and the one a
        rotation replaced until its overlap ends."""
        expires = self.previous_secret_expires_at
        if self.previous_secret is None or expires is None or expires <= at:
            return [self.secret]
        return [self.secret, self.previous_secret]


@dataclass(frozen=True)
class Answer:
    at: datetime
    status_code: int | None = None
    latency_ms: int | None = None
    error: str | None = None
    # Not sent: the webhook is disabled.
    cancelled: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    def entry(self) -> dict[str, Any]:
        return {
            "at": rfc3339(self.at),
            "statusCode": self.status_code,
            "latencyMs": self.latency_ms,
            "error": self.error,
        }


def _status_error(status: int) -> str | None:
    if 200 <= status < 300:
        return None
    if 300 <= status < 400:
        return f"answered {status}: redirects are not followed"
    return f"answered {status}"


def _described(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class DeliveryReconciler(Reconciler[Attempting, Answer]):
    name: ClassVar[str] = DELIVERY
    table: ClassVar[Table] = WebhookDelivery.__table__  # type: ignore[assignment]
    load_in_one_statement: ClassVar[bool] = True

    def __init__(
        self,
        client: httpx.AsyncClient,
        keys: KeyRing,
        firewall: Firewall,
        *,
        retry_base_seconds: float,
        concurrency: int,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.client = client
        self.keys = keys
        self.firewall = firewall
        self.retry_base_seconds = retry_base_seconds
        self.concurrency = concurrency
        self.lease_seconds = max(lease_seconds, 3 * TIMEOUT_SECONDS)

    async def load(self, session: AsyncSession, row_id: Any) -> Attempting | None:
        row = await WebhookRepository.from_session(session).attempt_of(row_id)
        if row is None or row.state != DeliveryState.pending:
            return None
        previous = None
        if row.previous_secret is not None:
            previous = decrypt_stored(self.keys, row.previous_secret, row.key_derivation)
        return Attempting(
            delivery_id=str(row_id),
            webhook_id=row.webhook_id,
            tenant_id=row.tenant_id,
            message_id=row.message_id,
            payload=row.payload,
            history=list(row.history or []),
            created_at=row.created_at,
            url=row.url,
            enabled=row.enabled,
            secret=decrypt_stored(self.keys, row.secret, row.key_derivation),
            previous_secret=previous,
            previous_secret_expires_at=row.previous_secret_expires_at,
        )

    async def act(self, snapshot: Attempting, fence: Fence) -> Answer:
        # The database's time (the lease's, and the monotonic time since): stamps and the
        # rotation's overlap are judged by it.
        if not snapshot.enabled:
            return Answer(
                fence.lease.now(), error="the webhook is disabled: not sent", cancelled=True
            )
        try:
            targets = await asyncio.wait_for(resolve(snapshot.url, self.firewall), TIMEOUT_SECONDS)
        except DestinationRefused as exc:
            error = f"refused by the firewall, nothing sent: {exc}"
            return Answer(fence.lease.now(), error=error)
        except TimeoutError:
            error = "the destination's name did not resolve within 10 s"
            return Answer(fence.lease.now(), error=error)
        except (OSError, ValueError) as exc:
            return Answer(fence.lease.now(), error=_described(exc))
        at = fence.lease.now()
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            "webhook-id": snapshot.message_id,
            "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": secrets.signature_header(
                snapshot.signing(at), snapshot.message_id, at, snapshot.payload
            ),
        }
        # Under the lease, held just before the request: a worker that stalled past it
        # sends nothing (the attempt is its successor's).
        await fence.hold()
        started = time.monotonic()
        status: int | None = None
        try:
            async with asyncio.timeout(TIMEOUT_SECONDS):
                status = await self._send(targets, headers, snapshot.payload.encode())
        except TimeoutError:
            failure: str | None = "no answer within 10 s"
        except httpx.HTTPError as exc:
            failure = _described(exc)
        else:
            failure = _status_error(status)
        latency = round((time.monotonic() - started) * 1000)
        return Answer(at, status, latency, failure)

    async def _send(self, targets: Sequence[Target], headers: dict[str, str], body: bytes) -> int:
        """POST to the first address that takes the connection (the others only when a
        connection could not be made: nothing was sent to them)."""
        for index, target in enumerate(targets):
            request = target.request(self.client, headers, body)
            try:
                response = await self.client.send(request, stream=True)
            except httpx.ConnectError:
                if index == len(targets) - 1:
                    raise
                continue
            await response.aclose()
            return response.status_code
        raise AssertionError("no target")  # resolve() answers at least one

    async def apply(
        self, session: AsyncSession, guard: LeaseGuard, snapshot: Attempting, outcome: Answer
    ) -> None:
        columns = WebhookDelivery.__table__.c
        history = [*snapshot.history, outcome.entry()][-MAX_HISTORY:]
        error = outcome.error[:MAX_ERROR] if outcome.error else None
        attempt: dict[str, Any] = {
            "last_status_code": outcome.status_code,
            "last_latency_ms": outcome.latency_ms,
            "last_error": error,
            "last_attempt_at": outcome.at,
        }
        if outcome.cancelled:
            await guard.update(
                state=DeliveryState.cancelled.value, last_error=error, reconcile_at=None
            )
            return
        repository = WebhookRepository.from_session(session)
        if outcome.succeeded:
            if await guard.update(
                state=DeliveryState.succeeded.value,
                attempts=columns.attempts + 1,
                history=history,
                reconcile_at=None,
                **attempt,
            ):
                await repository.clear_failing(snapshot.webhook_id)
            return
        # The chain head before the webhook row: disabling appends an event (repository.py).
        await repository.lock_chain(snapshot.tenant_id)
        now = await guard.now()
        # Every attempt in the history failed (a success ends the delivery).
        retry_at = schedule.next_attempt(
            snapshot.created_at, now, len(history), self.retry_base_seconds
        )
        state = DeliveryState.pending if retry_at is not None else DeliveryState.failed
        if not await guard.update(
            state=state.value,
            attempts=columns.attempts + 1,
            history=history,
            reconcile_at=retry_at,
            **attempt,
        ):
            return
        failing_since = await repository.mark_failing(snapshot.webhook_id, outcome.at)
        if failing_since is not None and schedule.should_disable(failing_since, outcome.at):
            await self._disable(session, snapshot, failing_since, now)

    async def _disable(
        self, session: AsyncSession, snapshot: Attempting, failing_since: datetime, now: datetime
    ) -> None:
        since = rfc3339(failing_since)
        reason = f"every delivery attempt failed since {since} (3 days): disabled"
        repository = WebhookRepository.from_session(session)
        if not await repository.disable(snapshot.webhook_id, reason, now):
            return
        # Its other pending deliveries end at once (cancelled), not at their next attempt.
        if await repository.pending_due(snapshot.webhook_id, now):
            wake_after_commit(session, DELIVERY)
        log.warning("webhook disabled", webhook=snapshot.webhook_id, failing_since=since)
        event = platform_event(
            "webhook.disabled", "webhook", snapshot.webhook_id, reason=reason, failingSince=since
        )
        await append(session, snapshot.tenant_id, event)


def build_delivery_reconciler(context: ReconcileContext) -> Reconciler[Any, Any] | None:
    settings = context.settings

    def build() -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(TIMEOUT_SECONDS),
            follow_redirects=False,
            # Proxies from the environment would connect where the firewall did not judge.
            trust_env=False,
            verify=verifying_tls(trust_env=False),
            # No connection outlives its delivery: each is made to an address judged for
            # one URL's host (a pooled one could carry another host's request).
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        context.close_on_stop(client.aclose)
        return client

    return DeliveryReconciler(
        context.shared("webhook-deliveries", build),
        settings.keyring(),
        firewall_from_settings(settings),
        retry_base_seconds=settings.webhook_retry_base_seconds,
        concurrency=settings.reconcile_concurrency,
    )
