"""The Invoice resource exactly as the spec shows it, plus portal sessions, receipt links
and the price list. Money is a string with two decimals; unit prices keep their own
precision."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import Field

from tenantplane.billing.models import Invoice, InvoiceLineItem
from tenantplane.billing.pricing import PlanPrices
from tenantplane.catalogue.plans import PlanLimits
from tenantplane.db.base import rfc3339
from tenantplane.db.reads import ReadRow
from tenantplane.http.schemas import OutputModel, UtcDateTime

CENT = Decimal("0.01")


def money(value: Decimal) -> str:
    return format(value.quantize(CENT), "f")


def plain(value: Decimal) -> str:
    """A decimal without exponent notation (``1E+1`` would puzzle clients)."""
    return format(value, "f")


class BillingPeriod(OutputModel):
    start: UtcDateTime
    end: UtcDateTime


class InvoiceStatus(OutputModel):
    phase: str
    billed_until: UtcDateTime
    issued_at: UtcDateTime
    currency: str
    subtotal: str
    credits_applied: str
    tax: str
    total: str
    provider_invoice_number: str
    line_items: list[dict[str, Any]]
    conditions: list[dict[str, Any]]


class InvoiceRead(OutputModel):
    name: str
    billing_period: BillingPeriod
    created_at: UtcDateTime
    resource_version: str
    provider_transaction_id: str = Field(alias="providerTransactionID")
    status: InvoiceStatus

    @classmethod
    def of(cls, invoice: Invoice) -> InvoiceRead:
        return cls(
            name=invoice.name,
            billing_period=BillingPeriod(start=invoice.period_start, end=invoice.period_end),
            created_at=invoice.created_at,
            resource_version=str(invoice.resource_version),
            provider_transaction_id=invoice.provider_transaction_id,
            status=InvoiceStatus(
                phase=invoice.phase,
                billed_until=invoice.period_end,
                issued_at=invoice.created_at,
                currency=invoice.currency,
                subtotal=money(invoice.subtotal),
                credits_applied=money(invoice.credits_applied),
                tax=money(invoice.tax),
                total=money(invoice.total),
                provider_invoice_number=invoice.provider_invoice_number,
                line_items=[line_item(line) for line in invoice.line_items],
                conditions=list(invoice.conditions),
            ),
        )


def invoice_document(invoice: ReadRow, lines: list[ReadRow]) -> dict[str, Any]:
    """``InvoiceRead.of(...)`` as JSON, built straight from a listing's plain rows (the same
    fields in the same order; tests/billing/test_list_item_shapes.py compares them)."""
    return {
        "name": invoice.name,
        "billingPeriod": {
            "start": rfc3339(invoice.period_start),
            "end": rfc3339(invoice.period_end),
        },
        "createdAt": rfc3339(invoice.created_at),
        "resourceVersion": str(invoice.resource_version),
        "providerTransactionID": invoice.provider_transaction_id,
        "status": {
            "phase": invoice.phase,
            "billedUntil": rfc3339(invoice.period_end),
            "issuedAt": rfc3339(invoice.created_at),
            "currency": invoice.currency,
            "subtotal": money(invoice.subtotal),
            "creditsApplied": money(invoice.credits_applied),
            "tax": money(invoice.tax),
            "total": money(invoice.total),
            "providerInvoiceNumber": invoice.provider_invoice_number,
            "lineItems": [line_item(line) for line in lines],
            "conditions": list(invoice.conditions),
        },
    }


def line_item(line: InvoiceLineItem | ReadRow) -> dict[str, Any]:
    item = {
        "kind": line.kind,
        "description": line.description,
        "quantity": plain(line.quantity),
        "unit": line.unit,
        "unitPrice": plain(line.unit_price),
        "amount": money(line.amount),
    }
    if line.cluster:
        item["cluster"] = line.cluster
    return item


class ReceiptLink(OutputModel):
    url: str


class PortalSessionRead(OutputModel):
    overview_url: str = Field(alias="overviewURL")
    update_payment_method_url: str | None = Field(default=None, alias="updatePaymentMethodURL")


class MeterRead(OutputModel):
    name: str
    unit: str
    price: str
    included: str


class PricesRead(OutputModel):
    currency: str
    platform_fee: str
    vcpu_hour: str
    memory_gib_hour: str
    storage_gib_hour: str
    ha_control_plane_hour: str
    observability: list[MeterRead]


class LimitsRead(OutputModel):
    clusters: int
    cpu: str
    memory: str
    storage: str


class PlanRead(OutputModel):
    name: str
    limits: LimitsRead
    prices: PricesRead

    @classmethod
    def of(cls, limits: PlanLimits, prices: PlanPrices) -> PlanRead:
        return cls(
            name=prices.plan,
            limits=LimitsRead(
                clusters=limits.clusters,
                cpu=limits.cpu,
                memory=limits.memory,
                storage=limits.storage,
            ),
            prices=PricesRead(
                currency=prices.currency,
                platform_fee=plain(prices.platform_fee),
                vcpu_hour=plain(prices.vcpu_hour),
                memory_gib_hour=plain(prices.memory_gib_hour),
                storage_gib_hour=plain(prices.storage_gib_hour),
                ha_control_plane_hour=plain(prices.ha_control_plane_hour),
                observability=[
                    MeterRead(
                        name=meter.name,
                        unit=meter.unit,
                        price=plain(meter.price),
                        included=plain(meter.included),
                    )
                    for meter in prices.meters
                ],
            ),
        )
