"""The price list: per plan a monthly platform fee, resource-hour prices, the HA control
plane's hourly price and metered observability units with included allowances.

Prices sit beside ``limits`` in the plan catalogue (``plans.<name>.prices`` of
``TENANTPLANE_PLANS_FILE``, default ``catalogue/plans.yaml``); this module reads only that
section. Prices are exact ``Decimal`` values parsed from strings (a float in the file is
refused: it is already rounded).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from tenantplane.catalogue.plans import PACKAGED_PLANS
from tenantplane.tenant.models import Plan

DEFAULT_PRICING_FILE = PACKAGED_PLANS


class PricingError(ValueError):
    """The price list is malformed (raised at load, never in the middle of a billing run)."""


@dataclass(frozen=True)
class MeterPrice:
    name: str
    unit: str
    price: Decimal
    included: Decimal


@dataclass(frozen=True)
class PlanPrices:
    plan: str
    currency: str
    platform_fee: Decimal
    vcpu_hour: Decimal
    memory_gib_hour: Decimal
    storage_gib_hour: Decimal
    ha_control_plane_hour: Decimal
    meters: tuple[MeterPrice, ...]


@dataclass(frozen=True)
class PriceList:
    plans: dict[str, PlanPrices]

    def for_plan(self, plan: str) -> PlanPrices:
        try:
            return self.plans[plan]
        except KeyError:
            raise PricingError(f"the price list has no plan {plan!r}") from None


def _money(value: Any, where: str) -> Decimal:
    if not isinstance(value, str):
        raise PricingError(f"{where}: write amounts as quoted decimal strings")
    try:
        amount = Decimal(value)
    except InvalidOperation:
        raise PricingError(f"{where}: {value!r} is not a decimal amount") from None
    if not amount.is_finite() or amount < 0:
        raise PricingError(f"{where}: amounts are finite and not negative")
    return amount


def _plan(name: str, document: Any) -> PlanPrices:
    if not isinstance(document, dict) or not isinstance(document.get("prices"), dict):
        raise PricingError(f"plans.{name}: a `prices` mapping is required")
    prices = document["prices"]
    where = f"plans.{name}.prices"
    currency = prices.get("currency")
    if not isinstance(currency, str) or len(currency) != 3 or not currency.isupper():
        raise PricingError(f"{where}.currency: an ISO 4217 code such as EUR")
    meters = []
    for meter, spec in (prices.get("observability") or {}).items():
        if not isinstance(spec, dict) or not isinstance(spec.get("unit"), str):
            raise PricingError(f"{where}.observability.{meter}: unit, price and included")
        meters.append(
            MeterPrice(
                name=str(meter),
                unit=spec["unit"],
                price=_money(spec.get("price"), f"{where}.observability.{meter}.price"),
                included=_money(spec.get("included"), f"{where}.observability.{meter}.included"),
            )
        )
    return PlanPrices(
        plan=name,
        currency=currency,
        platform_fee=_money(prices.get("platformFee"), f"{where}.platformFee"),
        vcpu_hour=_money(prices.get("vcpuHour"), f"{where}.vcpuHour"),
        memory_gib_hour=_money(prices.get("memoryGibHour"), f"{where}.memoryGibHour"),
        storage_gib_hour=_money(prices.get("storageGibHour"), f"{where}.storageGibHour"),
        ha_control_plane_hour=_money(
            prices.get("haControlPlaneHour"), f"{where}.haControlPlaneHour"
        ),
        meters=tuple(meters),
    )


def parse_price_list(text: str) -> PriceList:
    document = yaml.safe_load(text)
    if not isinstance(document, dict) or not isinstance(document.get("plans"), dict):
        raise PricingError("the price list needs a top-level `plans` mapping")
    plans = {str(name): _plan(str(name), spec) for name, spec in document["plans"].items()}
    missing = [plan.value for plan in Plan if plan.value not in plans]
    if missing:
        raise PricingError(f"the price list has no prices for plans: {', '.join(missing)}")
    return PriceList(plans)


@lru_cache(maxsize=8)
def _load(path: Path, mtime_ns: int) -> PriceList:
    return parse_price_list(path.read_text(encoding="utf-8"))


def load_price_list(path: Path | None = None) -> PriceList:
    """The price list at ``path`` (default: the packaged one), re-read when the file changes."""
    path = path or DEFAULT_PRICING_FILE
    return _load(path, path.stat().st_mtime_ns)
