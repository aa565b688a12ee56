"""Payment providers (merchant of record): the port and its adapters."""

from __future__ import annotations

from tenantplane.config import Settings
from tenantplane.providers.payment.port import (
    BillingNotConfigured,
    ChargeRequest,
    NoPaymentProvider,
    PaymentProvider,
    PortalSession,
    ProviderNotFound,
    ProviderSubscription,
    ProviderTransaction,
    ProviderUnavailable,
    WebhookEvent,
)


def build_payment_provider(settings: Settings) -> PaymentProvider:
    if settings.billing_provider == "paddle":
        from tenantplane.providers.payment.paddle import PaddleProvider

        return PaddleProvider.from_settings(settings)
    return NoPaymentProvider()


__all__ = [
    "BillingNotConfigured",
    "ChargeRequest",
    "NoPaymentProvider",
    "PaymentProvider",
    "PortalSession",
    "ProviderNotFound",
    "ProviderSubscription",
    "ProviderTransaction",
    "ProviderUnavailable",
    "WebhookEvent",
    "build_payment_provider",
]
