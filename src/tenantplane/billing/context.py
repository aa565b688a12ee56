"""What billing code needs from the deployment: prices, the usage source, the provider."""

from __future__ import annotations

from dataclasses import dataclass

from tenantplane.billing.pricing import PriceList, load_price_list
from tenantplane.billing.usage import UsageSource, build_usage_source
from tenantplane.config import Settings
from tenantplane.providers.payment import PaymentProvider, build_payment_provider


@dataclass(frozen=True)
class BillingContext:
    prices: PriceList
    usage: UsageSource
    provider: PaymentProvider
    #: The reconcilers' lease (TENANTPLANE_RECONCILE_LEASE_SECONDS); a charge's is longer
    #: when the provider's timeout needs it.
    lease_seconds: float = 30.0

    @classmethod
    def from_settings(cls, settings: Settings) -> BillingContext:
        return cls(
            prices=load_price_list(settings.plans_file),
            usage=build_usage_source(settings),
            provider=build_payment_provider(settings),
            lease_seconds=settings.reconcile_lease_seconds,
        )
