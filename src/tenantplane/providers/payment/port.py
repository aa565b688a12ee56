"""The payment provider port: what billing needs from a merchant of record.

Adapters: ``none`` (the default: every call answers 503 BILLING_NOT_CONFIGURED) and
``paddle`` (Paddle Billing through its official SDK). Errors are the provider-neutral
exceptions below; the HTTP layer maps them to the codes in docs/errors.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from tenantplane.http.errors import ApiError, ServiceUnavailable


class BillingNotConfigured(ServiceUnavailable):
    def __init__(self) -> None:
        super().__init__(
            "the billing integration is not configured in this deployment",
            code="BILLING_NOT_CONFIGURED",
            retry_after=300,
        )


class ProviderUnavailable(ApiError):
    """The provider failed, timed out or refused the call (502; details only in logs)."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            502,
            "the payment provider is unavailable; retry later",
            code="BILLING_PROVIDER_UNAVAILABLE",
        )
        self.detail = detail


class ProviderNotFound(Exception):
    """The provider has no such entity (or no hosted document for it)."""


@dataclass(frozen=True)
class ChargeRequest:
    invoice_uid: str
    invoice_name: str
    tenant: str
    customer_id: str
    address_id: str | None
    currency: str
    amount: Decimal  # the net charge, excluding tax
    description: str
    period_start: datetime
    period_end: datetime
    # No charge for this invoice is older (the database's clock): the earlier of its issue
    # and its first charge attempt. It bounds the search for one an earlier attempt made.
    earliest_charge: datetime


@dataclass(frozen=True)
class ProviderTransaction:
    """What billing keeps of a provider transaction (a charge) and its payment state."""

    id: str
    status: str  # the provider's own word: billed, completed, past_due, …
    currency: str
    customer_id: str
    # Before tax: the items' amount and the discount taken off it (None: not reported).
    subtotal: Decimal | None
    discount: Decimal | None
    tax: Decimal | None
    total: Decimal | None
    invoice_number: str | None
    invoice_uid: str | None  # our correlation id, from the transaction's custom data


@dataclass(frozen=True)
class ProviderSubscription:
    """What billing keeps of a provider subscription: whose it is and its standing."""

    id: str
    customer_id: str
    status: str  # the provider's own word: active, past_due, paused, canceled, …


@dataclass(frozen=True)
class PortalSession:
    overview_url: str
    update_payment_method_url: str | None


@dataclass(frozen=True)
class WebhookEvent:
    event_id: str
    event_type: str
    occurred_at: datetime
    payload: dict[str, object]


class PaymentProvider(Protocol):
    name: str

    @property
    def configured(self) -> bool: ...

    @property
    def accepts_webhooks(self) -> bool: ...

    async def create_charge(self, request: ChargeRequest) -> ProviderTransaction: ...

    async def find_charge(self, request: ChargeRequest) -> ProviderTransaction | None:
        """The charge made for this invoice by an earlier attempt (whose worker died, froze
        or lost the answer), found by the invoice's uid; None when there is none. Called
        before every create: it must see every transaction of the customer created since
        the invoice was issued, all pages."""

    async def receipt_url(self, transaction_id: str) -> str:
        """A fresh link to the hosted invoice PDF (ProviderNotFound when there is none)."""

    async def portal_session(
        self, customer_id: str, subscription_id: str | None
    ) -> PortalSession: ...

    def verify_webhook(self, headers: Mapping[str, str], body: bytes) -> bool: ...

    def parse_transaction(self, data: Mapping[str, object]) -> ProviderTransaction: ...

    def parse_subscription(self, data: Mapping[str, object]) -> ProviderSubscription: ...

    async def aclose(self) -> None:
        """Close the connections to the provider (at shutdown)."""


class NoPaymentProvider:
    """No merchant of record: invoices are issued and stay Draft; provider calls are 503."""

    name = "none"

    @property
    def configured(self) -> bool:
        return False

    @property
    def accepts_webhooks(self) -> bool:
        return False

    async def create_charge(self, request: ChargeRequest) -> ProviderTransaction:
        raise BillingNotConfigured()

    async def find_charge(self, request: ChargeRequest) -> ProviderTransaction | None:
        raise BillingNotConfigured()

    async def receipt_url(self, transaction_id: str) -> str:
        raise BillingNotConfigured()

    async def portal_session(self, customer_id: str, subscription_id: str | None) -> PortalSession:
        raise BillingNotConfigured()

    def verify_webhook(self, headers: Mapping[str, str], body: bytes) -> bool:
        raise BillingNotConfigured()

    def parse_transaction(self, data: Mapping[str, object]) -> ProviderTransaction:
        raise BillingNotConfigured()

    def parse_subscription(self, data: Mapping[str, object]) -> ProviderSubscription:
        raise BillingNotConfigured()

    async def aclose(self) -> None:
        return None
