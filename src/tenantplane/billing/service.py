"""Billing use cases of the API and the operator: invoices, receipts, portal sessions,
promotional credit and billing profiles. Services never commit."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.billing.models import BillingProfile, CreditEntry, Invoice, InvoicePhase
from tenantplane.billing.repository import (
    BillingRepository,
    invoice_listing_of,
    read_invoices,
)
from tenantplane.billing.schemas import invoice_document
from tenantplane.db.clock import clock_of
from tenantplane.db.reads import ReadRow, Reads
from tenantplane.http.documents import EncodedDocuments
from tenantplane.http.errors import ApiError, Conflict, NotFound, ValidationFailed
from tenantplane.providers.payment import (
    BillingNotConfigured,
    PaymentProvider,
    PortalSession,
    ProviderNotFound,
)
from tenantplane.reconcile import wake_after_commit
from tenantplane.tenant.models import Tenant

RECEIPT_PHASES = frozenset({InvoicePhase.paid.value, InvoicePhase.past_due.value})


class BillingProfileMissing(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "this tenant has no billing profile yet; the platform operator links one",
            code="BILLING_PROFILE_MISSING",
        )


class InvoiceNotCharged(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "the invoice has not been charged yet: receipts exist for Paid and PastDue invoices",
            code="INVOICE_NOT_CHARGED",
        )


class ReceiptNotAvailable(ApiError):
    def __init__(self) -> None:
        super().__init__(
            404,
            "the payment provider hosts no invoice document for this charge",
            code="RECEIPT_NOT_AVAILABLE",
        )


async def invoice_listing(
    reads: Reads, documents: EncodedDocuments, tenant_id: int
) -> list[orjson.Fragment]:
    """The tenant's invoices as the API shows them, encoded (http/documents.py)."""

    async def read(ids: list[int]) -> list[tuple[ReadRow, dict[str, Any]]]:
        found = await read_invoices(reads, tenant_id, ids)
        return [(invoice, invoice_document(invoice, lines)) for invoice, lines in found]

    items, _ = await documents.page(reads, invoice_listing_of(tenant_id, read))
    return items


async def get_invoice(session: AsyncSession, tenant_id: int, name: str) -> Invoice:
    invoice = await BillingRepository.from_session(session).get_invoice(
        tenant_id, check_invoice_name(name)
    )
    if invoice is None:
        raise NotFound("invoice")
    return invoice


_INVOICE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,94}[a-z0-9])$")


def check_invoice_name(name: str) -> str:
    """Invoice names are tenant-YYYYMMDD[-HHMMSS][-final]: DNS-label characters, up to 96."""
    if not _INVOICE_NAME.fullmatch(name):
        raise ValidationFailed("invalid invoice name", field="name", code="INVALID_NAME")
    return name


async def receipt_url(
    session: AsyncSession, provider: PaymentProvider, tenant_id: int, name: str
) -> str:
    """A fresh link to the provider-hosted invoice PDF (never stored, never logged)."""
    invoice = await get_invoice(session, tenant_id, name)
    if invoice.phase not in RECEIPT_PHASES or not invoice.provider_transaction_id:
        raise InvoiceNotCharged()
    if not provider.configured:
        raise BillingNotConfigured()
    if invoice.net <= 0:
        # Paddle hosts no invoice PDF for zero-value transactions.
        raise ReceiptNotAvailable()
    try:
        return await provider.receipt_url(invoice.provider_transaction_id)
    except ProviderNotFound:
        raise ReceiptNotAvailable() from None


async def portal_session(
    session: AsyncSession, provider: PaymentProvider, tenant_id: int
) -> PortalSession:
    if not provider.configured:
        raise BillingNotConfigured()
    profile = await BillingRepository.from_session(session).profile(tenant_id)
    if profile is None:
        raise BillingProfileMissing()
    try:
        return await provider.portal_session(profile.customer_id, profile.subscription_id)
    except ProviderNotFound:
        # The linked customer is unknown to the provider: the link is wrong, not the caller.
        raise BillingProfileMissing() from None


# Operator use cases ----------------------------------------------------------------------


async def tenant_named(session: AsyncSession, name: str) -> Tenant:
    tenant = await BillingRepository.from_session(session).tenant_by_name(name)
    if tenant is None:
        raise NotFound(f"tenant {name}")
    return tenant


def parse_credit(amount: str) -> Decimal:
    try:
        value = Decimal(amount)
    except InvalidOperation:
        raise ValidationFailed("AMOUNT must be a decimal amount", field="amount") from None
    if not value.is_finite() or value <= 0 or value != value.quantize(Decimal("0.01")):
        raise ValidationFailed("AMOUNT must be positive with at most two decimals", field="amount")
    return value.quantize(Decimal("0.01"))


async def grant_credit(session: AsyncSession, name: str, amount: str, note: str) -> Decimal:
    """Add promotional credit; returns the tenant's new balance."""
    tenant = await tenant_named(session, name)
    repository = BillingRepository.from_session(session)
    repository.add(
        CreditEntry(
            tenant_id=tenant.id,
            amount=parse_credit(amount),
            note=note,
            created_at=await clock_of(session).now(),
        )
    )
    await session.flush()
    return await repository.credit_balance(tenant.id)


def _check_id(value: str | None, prefix: str, field: str) -> None:
    if value is not None and (not value.startswith(prefix) or len(value) > 64):
        raise ValidationFailed(f"{field} must be a Paddle id starting with {prefix}", field=field)


async def link_profile(
    session: AsyncSession,
    name: str,
    customer_id: str,
    subscription_id: str | None,
    address_id: str | None,
) -> BillingProfile:
    """Link (or re-link) a tenant to its Paddle customer; uncharged invoices become due."""
    _check_id(customer_id, "ctm_", "customer")
    _check_id(subscription_id, "sub_", "subscription")
    _check_id(address_id, "add_", "address")
    tenant = await tenant_named(session, name)
    repository = BillingRepository.from_session(session)
    profile = await repository.profile(tenant.id)
    if profile is None:
        profile = BillingProfile(tenant_id=tenant.id, customer_id=customer_id)
        repository.add(profile)
    profile.customer_id = customer_id
    profile.subscription_id = subscription_id
    profile.address_id = address_id
    now = await clock_of(session).now()
    profile.updated_at = now
    await session.flush()
    if await repository.rearm_drafts(now, tenant.id):
        from tenantplane.billing.cycle import INVOICES_RECONCILER

        wake_after_commit(session, INVOICES_RECONCILER)
    return profile
