"""Paddle Billing through its official SDK (``paddle-python-sdk``, module ``paddle_billing``).

* Charges are manually-collected transactions (``status: billed``) with one non-catalogue
  item for the invoice's net amount; Paddle adds tax, invoices the customer with our payment
  terms and reports payment through webhooks.
* Receipts are Paddle's transaction invoice PDF links (``GET /transactions/{id}/invoice``),
  fresh on every call and never stored or logged.
* Portal sessions are ``POST /customers/{id}/portal-sessions``.
* Webhooks are verified with the SDK's ``Verifier`` (``Paddle-Signature``: HMAC-SHA256 over
  ``ts:body``; timestamps outside the tolerance are refused).

The SDK is synchronous (``requests``): calls run in a worker thread with a timeout. Each
call gets its own SDK client (the SDK keeps per-request state on it), but every client's
session borrows the same connection pools (urllib3's, thread-safe), so connections to Paddle
are reused between calls and closed once, by ``aclose``. Its base URL comes from
``Options.environment.base_url``; ``TENANTPLANE_PADDLE_API_URL`` replaces it (a proxy, or
the loopback fake in the tests).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal
from typing import Any, TypeVar

import requests
import structlog
from paddle_billing import Client, Environment, Options
from paddle_billing.Entities.Shared import (
    CollectionMode,
    CurrencyCode,
    CustomData,
    Duration,
    Interval,
    Money,
    Status,
    TaxCategory,
    TimePeriod,
    TransactionStatus,
)
from paddle_billing.Exceptions.ApiError import ApiError as PaddleApiError
from paddle_billing.Notifications import Secret, Verifier
from paddle_billing.Resources.Addresses.Operations import ListAddresses
from paddle_billing.Resources.CustomerPortalSessions.Operations import (
    CreateCustomerPortalSession,
)
from paddle_billing.Resources.Shared.Operations.List.Comparator import Comparator
from paddle_billing.Resources.Shared.Operations.List.DateComparison import DateComparison
from paddle_billing.Resources.Shared.Operations.List.OrderBy import OrderBy
from paddle_billing.Resources.Shared.Operations.List.Pager import Pager
from paddle_billing.Resources.Transactions.Operations import CreateTransaction, ListTransactions
from paddle_billing.Resources.Transactions.Operations.Create import (
    CreateBillingDetails,
    TransactionCreateItemWithPrice,
)
from paddle_billing.Resources.Transactions.Operations.Price import (
    TransactionNonCatalogPriceWithProduct,
    TransactionNonCatalogProduct,
)
from requests.adapters import BaseAdapter

from tenantplane.config import Settings
from tenantplane.providers.http_pool import close_adapters
from tenantplane.providers.payment.port import (
    ChargeRequest,
    PortalSession,
    ProviderNotFound,
    ProviderSubscription,
    ProviderTransaction,
    ProviderUnavailable,
)

log = structlog.get_logger(__name__)
T = TypeVar("T")

# The SDK logs requests and (at debug) response bodies, which hold short-lived receipt and
# portal URLs that must never be logged: it gets a logger that drops everything; failures
# are logged by this adapter instead, without URLs from responses.
_SDK_LOGGER = logging.getLogger("tenantplane.providers.payment.paddle.sdk")
_SDK_LOGGER.addHandler(logging.NullHandler())
_SDK_LOGGER.propagate = False
_SDK_LOGGER.setLevel(logging.CRITICAL + 1)

# ISO 4217 minor units of the currencies Paddle supports that are not cents.
ZERO_DECIMAL_CURRENCIES = frozenset({"JPY", "KRW"})
# The key of our correlation id in a transaction's custom_data.
INVOICE_UID_KEY = "tenantplane_invoice_uid"
# A page of the search for an earlier attempt's charge (Paddle allows up to 200).
FIND_PAGE_SIZE = 100
# How much earlier than our earliest possible charge time Paddle may stamp it: Paddle's clock
# and ours are not the same clock.
CLOCKS_MARGIN = timedelta(days=1)


def minor_units(currency: str) -> int:
    return 0 if currency.upper() in ZERO_DECIMAL_CURRENCIES else 2


def to_lowest_unit(amount: Decimal, currency: str) -> str:
    """Paddle's money: an integer string in the currency's lowest unit ("1234" = 12.34)."""
    scaled = amount.scaleb(minor_units(currency)).to_integral_exact()
    return str(int(scaled))


def from_lowest_unit(value: Any, currency: str) -> Decimal | None:
    if value is None or value == "":
        return None
    digits = minor_units(currency)
    return (Decimal(str(value)).scaleb(-digits)).quantize(Decimal(1).scaleb(-digits))


@dataclass(frozen=True)
class _Endpoint:
    """Stands in for ``paddle_billing.Environment``: the SDK reads only ``base_url``."""

    base_url: str


class _SignedRequest:
    """The shape the SDK's Verifier reads: ``headers.get`` and ``body`` bytes."""

    def __init__(self, headers: Mapping[str, str], body: bytes) -> None:
        self.headers = headers
        self.body = body


def _get(data: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


class _SharedConnections:
    """The connection adapters of the SDK's first session, mounted on every later one.

    The SDK's own adapters are kept (its retry policy on https included); only their pools
    are shared instead of being built, and left to the garbage collector, per call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._adapters: dict[str, BaseAdapter] | None = None

    def lend(self, session: requests.Session) -> None:
        with self._lock:
            if self._adapters is None:
                self._adapters = dict(session.adapters)
            adapters = self._adapters
        for prefix, adapter in adapters.items():
            session.mount(prefix, adapter)

    def close(self) -> None:
        with self._lock:
            adapters, self._adapters = self._adapters, None
        close_adapters((adapters or {}).values())


class PaddleProvider:
    name = "paddle"

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str,
        webhook_secret: str | None,
        timeout: float,
        tolerance_seconds: int,
        payment_terms_days: int,
    ) -> None:
        self._api_key = api_key
        self.base_url = base_url
        self._webhook_secret = webhook_secret
        self.timeout = timeout
        self.tolerance_seconds = tolerance_seconds
        self.payment_terms_days = payment_terms_days
        self._connections = _SharedConnections()

    @classmethod
    def from_settings(cls, settings: Settings) -> PaddleProvider:
        environment = Environment(settings.paddle_environment)
        secret = settings.paddle_webhook_secret
        return cls(
            api_key=settings.paddle_api_key.get_secret_value() if settings.paddle_api_key else "",
            base_url=settings.paddle_api_url or environment.base_url,
            webhook_secret=secret.get_secret_value() if secret else None,
            timeout=settings.paddle_timeout_seconds,
            tolerance_seconds=settings.paddle_webhook_tolerance_seconds,
            payment_terms_days=settings.paddle_payment_terms_days,
        )

    @property
    def configured(self) -> bool:
        return bool(self._api_key)

    async def aclose(self) -> None:
        """Close the connections to Paddle (at shutdown)."""
        self._connections.close()

    def _client(self) -> Any:
        # One client per call: the SDK keeps per-request state on the client object.
        client = Client(
            self._api_key,
            options=Options(environment=_Endpoint(self.base_url)),
            timeout=self.timeout,
            logger=_SDK_LOGGER,
        )
        self._connections.lend(client.client)
        return client

    async def _call(self, what: str, work: Callable[[Any], T]) -> T:
        if not self.configured:
            raise ProviderUnavailable("no Paddle API key configured")

        def run() -> T:
            return work(self._client())

        try:
            return await asyncio.to_thread(run)
        except PaddleApiError as exc:
            status = exc.response.status_code if exc.response is not None else None
            if status == 404:
                raise ProviderNotFound(exc.error_code) from exc
            log.warning(
                "paddle call failed",
                call=what,
                status=status,
                code=exc.error_code,
                detail=exc.detail,
            )
            raise ProviderUnavailable(f"{what}: {status} {exc.error_code}") from exc
        except requests.RequestException as exc:
            log.warning("paddle unreachable", call=what, error=type(exc).__name__)
            raise ProviderUnavailable(f"{what}: {type(exc).__name__}") from exc
        except (KeyError, ValueError, TypeError) as exc:
            # A response the SDK could not read: treat as a provider failure, never a 500.
            log.warning("paddle response unreadable", call=what, error=repr(exc))
            raise ProviderUnavailable(f"{what}: unreadable response") from exc

    def _operation(self, request: ChargeRequest) -> CreateTransaction:
        currency = CurrencyCode(request.currency)
        item = TransactionCreateItemWithPrice(
            price=TransactionNonCatalogPriceWithProduct(
                description=request.description,
                unit_price=Money(to_lowest_unit(request.amount, request.currency), currency),
                product=TransactionNonCatalogProduct(
                    name=f"tenantplane {request.invoice_name}",
                    tax_category=TaxCategory.Standard,
                ),
            ),
            quantity=1,
        )
        operation = CreateTransaction(
            items=[item],
            status=TransactionStatus.Billed,
            customer_id=request.customer_id,
            currency_code=currency,
            collection_mode=CollectionMode.Manual,
            billing_details=CreateBillingDetails(
                payment_terms=Duration(Interval.Day, self.payment_terms_days),
                enable_checkout=True,
            ),
            billing_period=TimePeriod(request.period_start, request.period_end),
            custom_data=CustomData(
                {
                    INVOICE_UID_KEY: request.invoice_uid,
                    "tenant": request.tenant,
                    "invoice": request.invoice_name,
                }
            ),
        )
        operation.address_id = request.address_id
        return operation

    async def _address_of(self, customer_id: str) -> str:
        """The customer's first active address: a billed transaction needs one (Paddle only
        marks transactions ready, then billed, with items, a customer and an address)."""

        def first_active(client: Any) -> Any:
            addresses = client.addresses.list(customer_id, ListAddresses(statuses=[Status.Active]))
            return next(iter(list(addresses.items)), None)

        address = await self._call("list addresses", first_active)
        if address is None:
            raise ProviderUnavailable(f"customer {customer_id} has no active address in Paddle")
        return str(address.id)

    async def create_charge(self, request: ChargeRequest) -> ProviderTransaction:
        if request.address_id is None:
            try:
                address_id = await self._address_of(request.customer_id)
            except ProviderNotFound as exc:
                raise ProviderUnavailable("list addresses: customer unknown") from exc
            request = replace(request, address_id=address_id)
        operation = self._operation(request)
        try:
            transaction = await self._call(
                "create transaction", lambda client: client.transactions.create(operation)
            )
        except ProviderNotFound as exc:
            raise ProviderUnavailable(f"create transaction: customer unknown ({exc})") from exc
        return self._from_entity(transaction)

    async def find_charge(self, request: ChargeRequest) -> ProviderTransaction | None:
        """Look through the customer's manually-collected transactions created since the
        invoice's earliest possible charge (less a margin for the two clocks), every page,
        for one that carries this invoice's id in its custom data. Paddle has no idempotency
        keys and cannot filter by custom data; the customer, the collection mode and the
        creation time are its documented filters (``GET /transactions``)."""
        operation = ListTransactions(
            pager=Pager(order_by=OrderBy.id_descending(), per_page=FIND_PAGE_SIZE),
            customer_ids=[request.customer_id],
            collection_mode=CollectionMode.Manual,
            created_at=DateComparison(request.earliest_charge - CLOCKS_MARGIN, Comparator.GTE),
        )

        def search(client: Any) -> Any:
            # The SDK's collection follows ``meta.pagination.next`` while ``has_more``.
            for transaction in client.transactions.list(operation):
                custom = transaction.custom_data.data if transaction.custom_data else {}
                if _get(custom, INVOICE_UID_KEY) == request.invoice_uid:
                    return transaction
            return None

        found = await self._call("find transaction", search)
        return None if found is None else self._from_entity(found)

    async def receipt_url(self, transaction_id: str) -> str:
        data = await self._call(
            "transaction invoice",
            lambda client: client.transactions.get_invoice_pdf(transaction_id),
        )
        return str(data.url)

    async def portal_session(self, customer_id: str, subscription_id: str | None) -> PortalSession:
        operation = CreateCustomerPortalSession(
            subscription_ids=[subscription_id] if subscription_id else []
        )
        session = await self._call(
            "portal session",
            lambda client: client.customer_portal_sessions.create(customer_id, operation),
        )
        update_url = None
        for entry in session.urls.subscriptions:
            if entry.id == subscription_id:
                update_url = entry.update_subscription_payment_method
        return PortalSession(session.urls.general.overview, update_url)

    def verify_webhook(self, headers: Mapping[str, str], body: bytes) -> bool:
        if not self._webhook_secret:
            return False
        verifier = Verifier(maximum_variance=self.tolerance_seconds)
        try:
            return bool(
                verifier.verify(_SignedRequest(headers, body), Secret(self._webhook_secret))
            )
        except (ValueError, UnicodeDecodeError, ConnectionRefusedError):
            # A malformed header or body is an unverifiable request, nothing more.
            return False

    @property
    def accepts_webhooks(self) -> bool:
        return bool(self._webhook_secret)

    def _from_entity(self, transaction: Any) -> ProviderTransaction:
        currency = transaction.currency_code.value
        totals = transaction.details.totals
        custom = transaction.custom_data.data if transaction.custom_data else {}
        return ProviderTransaction(
            id=transaction.id,
            status=transaction.status.value,
            currency=currency,
            customer_id=str(transaction.customer_id or ""),
            subtotal=from_lowest_unit(totals.subtotal, currency),
            discount=from_lowest_unit(totals.discount, currency),
            tax=from_lowest_unit(totals.tax, currency),
            total=from_lowest_unit(totals.total, currency),
            invoice_number=transaction.invoice_number,
            invoice_uid=_get(custom, INVOICE_UID_KEY),
        )

    def parse_transaction(self, data: Mapping[str, object]) -> ProviderTransaction:
        """A transaction entity as Paddle sends it in a webhook's ``data``."""
        currency = str(data.get("currency_code") or "")
        return ProviderTransaction(
            id=str(data.get("id") or ""),
            status=str(data.get("status") or ""),
            currency=currency,
            customer_id=str(data.get("customer_id") or ""),
            subtotal=from_lowest_unit(_get(data, "details", "totals", "subtotal"), currency),
            discount=from_lowest_unit(_get(data, "details", "totals", "discount"), currency),
            tax=from_lowest_unit(_get(data, "details", "totals", "tax"), currency),
            total=from_lowest_unit(_get(data, "details", "totals", "total"), currency),
            invoice_number=_string_or_none(data.get("invoice_number")),
            invoice_uid=_string_or_none(_get(data, "custom_data", INVOICE_UID_KEY)),
        )

    def parse_subscription(self, data: Mapping[str, object]) -> ProviderSubscription:
        """A subscription entity as Paddle sends it in a webhook's ``data``."""
        return ProviderSubscription(
            id=str(data.get("id") or ""),
            customer_id=str(data.get("customer_id") or ""),
            status=str(data.get("status") or ""),
        )


def _string_or_none(value: object) -> str | None:
    return str(value) if value not in (None, "") else None
