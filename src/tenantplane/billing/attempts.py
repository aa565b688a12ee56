"""All SQL of charge attempts (``invoice_charge_attempts``): begun under the invoice's lease
before the provider is called, finished with the invoice's outcome in the apply."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.models import ChargeAttempt, ChargeAttemptOutcome


class ChargeAttempts:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def begin(self, invoice_id: int, lease_token: str, now: datetime) -> int:
        """Record a new attempt as pending; earlier ones still pending were cut short (their
        worker died or lost its lease before recording an answer): interrupted."""
        await self.session.execute(
            update(ChargeAttempt)
            .where(
                ChargeAttempt.invoice_id == invoice_id,
                ChargeAttempt.outcome == ChargeAttemptOutcome.pending.value,
            )
            .values(outcome=ChargeAttemptOutcome.interrupted.value, finished_at=now)
        )
        result = await self.session.execute(
            insert(ChargeAttempt)
            .values(
                invoice_id=invoice_id,
                lease_token=lease_token,
                started_at=now,
                outcome=ChargeAttemptOutcome.pending.value,
                transaction_id="",
                error="",
            )
            .returning(ChargeAttempt.id)
        )
        return int(result.scalar_one())

    async def finish(
        self,
        attempt_id: int,
        outcome: ChargeAttemptOutcome,
        now: datetime,
        *,
        transaction_id: str = "",
        error: str = "",
    ) -> None:
        await self.session.execute(
            update(ChargeAttempt)
            .where(ChargeAttempt.id == attempt_id)
            .values(
                outcome=outcome.value,
                finished_at=now,
                transaction_id=transaction_id,
                error=error[:2000],
            )
        )

    async def first_started(self, invoice_id: int) -> datetime:
        """When the invoice's first attempt began (it has one once ``begin`` ran)."""
        statement = select(func.min(ChargeAttempt.started_at)).where(
            ChargeAttempt.invoice_id == invoice_id
        )
        started: datetime = (await self.session.execute(statement)).scalar_one()
        return started
