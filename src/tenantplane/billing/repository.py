"""All SQL of billing. Tenant scoping of invoices happens in ``_tenant_invoices`` (ORM) and
``_OF_TENANT`` (plain reads)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    Table,
    and_,
    bindparam,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased, raiseload

from tenantplane.billing.models import (
    BillingProfile,
    BillingSchedule,
    CreditEntry,
    Invoice,
    InvoiceKind,
    InvoiceLineItem,
    InvoicePhase,
    ProviderEvent,
)
from tenantplane.cluster.models import ClusterHistory, ClusterPhase
from tenantplane.db.reads import ReadRow, Reads, as_stored, digest_of
from tenantplane.db.rows import insert_of_rows, insert_rows
from tenantplane.http.documents import Listing, Reader
from tenantplane.tenant.models import Plan, Tenant


@dataclass(frozen=True)
class Advanced:
    """An invoice ``advance_invoice`` moved: its tenant, name, currency and total, and
    whether its phase changed (from a lower one) rather than only its details."""

    tenant_id: int
    name: str
    currency: str
    total: Decimal
    phase_changed: bool


# The columns an invoice and its line items show in the API.
INVOICE_LISTED = (
    "id",
    "name",
    "period_start",
    "period_end",
    "created_at",
    "resource_version",
    "provider_transaction_id",
    "phase",
    "currency",
    "subtotal",
    "credits_applied",
    "tax",
    "total",
    "provider_invoice_number",
    "conditions",
)
LINE_ITEM_LISTED = (
    "invoice_id",
    "kind",
    "description",
    "cluster",
    "quantity",
    "unit",
    "unit_price",
    "amount",
)


# The plain reads' tenant scope of invoices, in one place (the ORM's is ``_tenant_invoices``).
_OF_TENANT = Invoice.tenant_id == bindparam("tenant_id")
_WITH_IDS = Invoice.id.in_(bindparam("ids", expanding=True))
# A listing's first read: what says whether a kept document is still the invoice's own.
_INVOICE_VERSIONS = (
    select(Invoice.id, Invoice.resource_version, Invoice.name, as_stored(Invoice.created_at))
    .where(_OF_TENANT)
    .order_by(Invoice.period_start, Invoice.period_end, Invoice.kind.desc(), Invoice.id)
)
_INVOICES = select(*(getattr(Invoice, column) for column in INVOICE_LISTED)).where(
    _OF_TENANT, _WITH_IDS
)
_LINE_ITEMS = (
    select(*(getattr(InvoiceLineItem, column) for column in LINE_ITEM_LISTED))
    .join(Invoice, Invoice.id == InvoiceLineItem.invoice_id)
    .where(_OF_TENANT, _WITH_IDS)
    .order_by(InvoiceLineItem.invoice_id, InvoiceLineItem.position)
)
# Bound parameters per statement stay far under SQLite's limit (32,766).
_IDS_PER_READ = 500


_INVOICE_VERSIONS_DIGEST = digest_of(_INVOICE_VERSIONS)


def invoice_listing_of(tenant_id: int, read: Reader) -> Listing:
    """The tenant's invoices as a list (http/documents.py): their (id, resource_version,
    name, created_at as stored) in listing order, by billing period, a final invoice after
    a regular one of the same start; ``read`` for their documents."""
    return Listing(
        "invoice", _INVOICE_VERSIONS, _INVOICE_VERSIONS_DIGEST, {"tenant_id": tenant_id}, read
    )


async def read_invoices(
    reads: Reads, tenant_id: int, invoice_ids: Sequence[int]
) -> list[tuple[ReadRow, list[ReadRow]]]:
    """The tenant's invoices of ``invoice_ids`` as plain rows of the columns the API shows,
    each with its line items in order (an invoice and its lines from one snapshot)."""
    found: list[tuple[ReadRow, list[ReadRow]]] = []
    for start in range(0, len(invoice_ids), _IDS_PER_READ):
        scope = {"tenant_id": tenant_id, "ids": list(invoice_ids[start : start + _IDS_PER_READ])}
        invoices, line_items = await reads.snapshot((_INVOICES, scope), (_LINE_ITEMS, scope))
        lines: dict[int, list[ReadRow]] = {row.id: [] for row in invoices}
        for line in line_items:
            lines[line.invoice_id].append(line)
        found.extend((invoice, lines[invoice.id]) for invoice in invoices)
    return found


class BillingRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    @classmethod
    def from_session(cls, session: AsyncSession) -> BillingRepository:
        return cls(session)

    # Invoices -------------------------------------------------------------------------

    @staticmethod
    def _tenant_invoices(tenant_id: int) -> Select[Invoice]:
        return select(Invoice).where(Invoice.tenant_id == tenant_id)

    async def get_invoice(self, tenant_id: int, name: str) -> Invoice | None:
        statement = self._tenant_invoices(tenant_id).where(Invoice.name == name)
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def invoice_by_id(self, invoice_id: int) -> Invoice | None:
        return await self.session.get(Invoice, invoice_id)

    async def insert_invoice_once(self, values: dict[str, Any]) -> int | None:
        """Insert an invoice row unless its tenant already has one for the period (same
        start); the new id, or None when another run's invoice got there first. Concurrent
        inserts of one period wait for each other in the unique index, so exactly one wins."""
        dialect = self.session.get_bind().dialect.name
        builder = pg_insert if dialect == "postgresql" else sqlite_insert
        statement = (
            builder(Invoice)
            .values(**values)
            .on_conflict_do_nothing(index_elements=[Invoice.tenant_id, Invoice.period_start])
            .returning(Invoice.id)
        )
        inserted: int | None = (await self.session.execute(statement)).scalar_one_or_none()
        return inserted

    async def invoice_for_period(self, tenant_id: int, start: datetime) -> Invoice | None:
        statement = self._tenant_invoices(tenant_id).where(Invoice.period_start == start)
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def invoice_names(self, tenant_id: int) -> set[str]:
        statement = select(Invoice.name).where(Invoice.tenant_id == tenant_id)
        return set((await self.session.execute(statement)).scalars())

    async def last_period_end(self, tenant_id: int) -> datetime | None:
        statement = select(func.max(Invoice.period_end)).where(Invoice.tenant_id == tenant_id)
        value = (await self.session.execute(statement)).scalar()
        return _aware(value)

    async def has_final_invoice(self, tenant_id: int) -> bool:
        statement = select(Invoice.id).where(
            Invoice.tenant_id == tenant_id, Invoice.kind == InvoiceKind.final.value
        )
        return (await self.session.execute(statement.limit(1))).first() is not None

    def add(self, row: Any) -> None:
        self.session.add(row)

    # Many tenants at once (the billing run) ----------------------------------------------

    async def tenants_with_final_invoice(self, tenant_ids: Sequence[int]) -> set[int]:
        statement = select(Invoice.tenant_id).where(
            Invoice.tenant_id.in_(tenant_ids), Invoice.kind == InvoiceKind.final.value
        )
        return set((await self.session.execute(statement.distinct())).scalars())

    async def last_period_ends(self, tenant_ids: Sequence[int]) -> dict[int, datetime]:
        statement = (
            select(Invoice.tenant_id, func.max(Invoice.period_end))
            .where(Invoice.tenant_id.in_(tenant_ids))
            .group_by(Invoice.tenant_id)
        )
        rows = (await self.session.execute(statement)).all()
        return {tenant_id: end for tenant_id, value in rows if (end := _aware(value))}

    async def credit_balances(self, tenant_ids: Sequence[int]) -> dict[int, Decimal]:
        statement = select(CreditEntry.tenant_id, CreditEntry.amount).where(
            CreditEntry.tenant_id.in_(tenant_ids)
        )
        balances: dict[int, Decimal] = {}
        for tenant_id, amount in await self.session.execute(statement):
            balances[tenant_id] = balances.get(tenant_id, Decimal("0.00")) + amount
        return balances

    async def taken_invoice_names(
        self, tenant_ids: Sequence[int], names: Sequence[str]
    ) -> set[tuple[int, str]]:
        """Which of ``names`` the tenants already use, as (tenant id, name)."""
        statement = select(Invoice.tenant_id, Invoice.name).where(
            Invoice.tenant_id.in_(tenant_ids), Invoice.name.in_(names)
        )
        return {(tenant_id, name) for tenant_id, name in await self.session.execute(statement)}

    async def insert_invoices_once(self, rows: Sequence[dict[str, Any]]) -> dict[int, int]:
        """``insert_invoice_once`` for many tenants' periods in one statement: the new ids by
        tenant id; a tenant whose period already has an invoice is left out."""
        if not rows:
            return {}
        # The rows as one JSON parameter on PostgreSQL (db/rows.py): a statement of constant
        # text. As multi-row INSERTs, psycopg parsed every batch's thousands of
        # placeholders anew: a third of a billing run's CPU.
        insert, parameters = insert_of_rows(self.session, cast(Table, Invoice.__table__), rows)
        statement = insert.on_conflict_do_nothing(
            index_elements=[Invoice.tenant_id, Invoice.period_start]
        ).returning(Invoice.tenant_id, Invoice.id)
        result = await self.session.execute(statement, parameters)
        return {tenant_id: invoice_id for tenant_id, invoice_id in result}

    async def insert_rows(self, model: Any, rows: Sequence[dict[str, Any]]) -> None:
        """Plain rows of ``model`` in one statement (no objects in the session)."""
        await insert_rows(self.session, model.__table__, rows)

    async def invoices_by_ids(self, invoice_ids: Sequence[int]) -> Sequence[Invoice]:
        """The invoices without their line items (a run reports what it issued, not the
        lines: loading them took an eighth of its CPU); reading them raises."""
        statement = select(Invoice).where(Invoice.id.in_(invoice_ids))
        statement = statement.options(raiseload(Invoice.line_items))
        return (await self.session.execute(statement)).scalars().all()

    async def find_for_transaction(
        self, transaction_id: str, invoice_uid: str | None
    ) -> Invoice | None:
        """The invoice a provider transaction belongs to: by its id, or by our correlation id
        when the charge's answer was lost before the id was recorded."""
        if transaction_id:
            statement = select(Invoice).where(Invoice.provider_transaction_id == transaction_id)
            invoice = (await self.session.execute(statement)).scalars().first()
            if invoice is not None:
                return invoice
        if invoice_uid:
            statement = select(Invoice).where(Invoice.uid == invoice_uid)
            return (await self.session.execute(statement)).scalar_one_or_none()
        return None

    async def advance_invoice(
        self,
        invoice_id: int,
        target: InvoicePhase,
        occurred_at: datetime,
        values: dict[str, Any],
    ) -> Advanced | None:
        """Move an invoice to ``target`` only forwards: from a lower phase, or within the same
        phase for a newer event (which may fill in tax, total or the invoice number).
        Compare-and-set UPDATEs, so concurrent writers cannot move it backwards: first from a
        lower phase (the phase changes), else within ``target``. What the invoice is now,
        or None when it did not move."""
        lower = [phase.value for phase in InvoicePhase if phase.rank < target.rank]
        newer = or_(Invoice.provider_event_at.is_(None), Invoice.provider_event_at < occurred_at)
        conditions: tuple[ColumnElement[bool], ...] = (
            Invoice.phase.in_(lower),
            and_(Invoice.phase == target.value, newer),
        )
        for phase_changed, allowed in zip((True, False), conditions, strict=True):
            statement = (
                update(Invoice)
                .where(Invoice.id == invoice_id, allowed)
                .values(
                    phase=target.value,
                    provider_event_at=occurred_at,
                    resource_version=Invoice.resource_version + 1,
                    **values,
                )
                .returning(Invoice.tenant_id, Invoice.name, Invoice.currency, Invoice.total)
                .execution_options(synchronize_session=False)
            )
            row = (await self.session.execute(statement)).one_or_none()
            if row is not None:
                return Advanced(row.tenant_id, row.name, row.currency, row.total, phase_changed)
        return None

    async def rearm_drafts(self, now: datetime, tenant_id: int | None = None) -> int:
        """Make every uncharged Draft invoice due for the invoices reconciler now."""
        conditions = [
            Invoice.phase == InvoicePhase.draft.value,
            Invoice.provider_transaction_id == "",
            or_(Invoice.lock_expires_at.is_(None), Invoice.lock_expires_at < now),
        ]
        if tenant_id is not None:
            conditions.append(Invoice.tenant_id == tenant_id)
        statement = (
            update(Invoice)
            .where(*conditions)
            .values(reconcile_at=now)
            .execution_options(synchronize_session=False)
        )
        result = await self.session.execute(statement)
        return int(result.rowcount)  # type: ignore[attr-defined]

    # Tenants and their profiles and credit ---------------------------------------------

    async def billing_subjects(
        self, after: int, limit: int
    ) -> Sequence[Row[int, str, Plan, datetime]]:
        """(id, name, plan, created_at) of the first ``limit`` tenants of id above ``after``,
        in id order: a run over every tenant holds one page of them at a time."""
        statement = select(Tenant.id, Tenant.name, Tenant.plan, Tenant.created_at)
        statement = statement.where(Tenant.id > after).order_by(Tenant.id).limit(limit)
        return (await self.session.execute(statement)).all()

    async def tenant_by_name(self, name: str) -> Tenant | None:
        statement = select(Tenant).where(Tenant.name == name)
        return (await self.session.execute(statement)).scalar_one_or_none()

    async def tenant(self, tenant_id: int) -> Tenant | None:
        return await self.session.get(Tenant, tenant_id)

    async def tenant_for_subscription(self, subscription_id: str, customer_id: str) -> str | None:
        """The name of the tenant a provider subscription belongs to: the profile linking
        that subscription, else the one linking its customer without any subscription."""
        linked = select(Tenant.name).join(BillingProfile, BillingProfile.tenant_id == Tenant.id)
        if subscription_id:
            statement = linked.where(BillingProfile.subscription_id == subscription_id)
            name = (await self.session.execute(statement)).scalar_one_or_none()
            if name is not None:
                return name
        if not customer_id:
            return None
        statement = linked.where(
            BillingProfile.customer_id == customer_id, BillingProfile.subscription_id.is_(None)
        )
        return (await self.session.execute(statement.limit(1))).scalar_one_or_none()

    async def profile(self, tenant_id: int) -> BillingProfile | None:
        return await self.session.get(BillingProfile, tenant_id)

    async def credit_balance(self, tenant_id: int) -> Decimal:
        # Summed here, not in SQL: amounts are exact decimal strings.
        statement = select(CreditEntry.amount).where(CreditEntry.tenant_id == tenant_id)
        amounts = (await self.session.execute(statement)).scalars()
        return sum(amounts, Decimal("0.00"))

    # Usage --------------------------------------------------------------------------------

    async def history_for_period(
        self, tenant_id: int, start: datetime, end: datetime
    ) -> Sequence[ClusterHistory]:
        """Every row in [start, end) plus, per cluster, the last row before ``start`` (the
        state the period opens with) unless that row says the cluster is gone."""
        return await self.histories_for_period([tenant_id], start, end)

    async def histories_for_period(
        self, tenant_ids: Sequence[int], start: datetime, end: datetime
    ) -> Sequence[ClusterHistory]:
        """``history_for_period`` of several tenants sharing the period."""
        inside = select(ClusterHistory).where(
            ClusterHistory.tenant_id.in_(tenant_ids),
            ClusterHistory.at >= start,
            ClusterHistory.at < end,
        )
        earlier = aliased(ClusterHistory)
        latest_before = (
            select(func.max(earlier.at))
            .where(earlier.cluster_uid == ClusterHistory.cluster_uid, earlier.at < start)
            .correlate(ClusterHistory)
            .scalar_subquery()
        )
        opening = select(ClusterHistory).where(
            ClusterHistory.tenant_id.in_(tenant_ids),
            ClusterHistory.at < start,
            ClusterHistory.at == latest_before,
            ClusterHistory.phase != ClusterPhase.deleted.value,
        )
        rows = list((await self.session.execute(inside)).scalars())
        rows += list((await self.session.execute(opening)).scalars())
        return rows

    # Provider events --------------------------------------------------------------------

    async def insert_event_once(self, values: dict[str, Any]) -> bool:
        """Insert a webhook event unless its event id is known (False: a duplicate)."""
        dialect = self.session.get_bind().dialect.name
        builder = pg_insert if dialect == "postgresql" else sqlite_insert
        statement = (
            builder(ProviderEvent)
            .values(**values)
            .on_conflict_do_nothing(index_elements=[ProviderEvent.event_id])
            # A returned row, not rowcount: psycopg reports -1 for an INSERT whose primary key
            # comes back through RETURNING, whether or not a row was inserted.
            .returning(ProviderEvent.id)
        )
        inserted = (await self.session.execute(statement)).scalar_one_or_none()
        return inserted is not None

    async def event(self, event_id: int) -> ProviderEvent | None:
        return await self.session.get(ProviderEvent, event_id)

    # Schedule ---------------------------------------------------------------------------

    async def schedule(self) -> BillingSchedule | None:
        return await self.session.get(BillingSchedule, 1)


def _aware(value: Any) -> datetime | None:
    from datetime import UTC

    if value is None:
        return None
    parsed: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
