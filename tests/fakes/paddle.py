"""A loopback fake of the Paddle Billing API, written from Paddle's documentation.

Served by a real HTTP server on 127.0.0.1 (the official SDK talks to it over HTTP):

* ``POST /transactions`` (non-catalogue items), ``GET /transactions/{id}``,
  ``GET /transactions/{id}/invoice`` (a fresh, short-lived PDF link each call; none for
  zero-value transactions);
* ``POST /customers/{id}/portal-sessions``;
* Paddle's envelopes: ``{"data": …, "meta": {"request_id"}}`` and on failure
  ``{"error": {"type", "code", "detail", "documentation_url"}, "meta": {"request_id"}}``;
* bearer authentication with one API key.

Tests can make the next calls fail (any status and error code) or stall past the client's
timeout, move transactions on (paid, past due) and build signed webhook deliveries
(``Paddle-Signature: ts=…;h1=…``, HMAC-SHA256 over ``ts:body``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import operator
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from urllib.parse import parse_qs, urlencode

from tests.fakes.server import Hold, Holds, LoopbackServer, QuietHandler

DOCS = "https://developer.paddle.com/errors"
INVOICE_HOST = "https://sandbox-invoice.paddle.test"
PORTAL_HOST = "https://customer-portal.paddle.test"


def paddle_id(prefix: str) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return prefix + "_" + "".join(secrets.choice(alphabet) for _ in range(26))


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def sign(body: bytes, secret: str, timestamp: int | None = None) -> str:
    """The Paddle-Signature header for ``body`` (as Paddle computes it)."""
    ts = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{ts}:".encode() + body, hashlib.sha256).hexdigest()
    return f"ts={ts};h1={digest}"


@dataclass
class Failure:
    status: int
    code: str
    detail: str
    type: str = "request_error"
    # Which calls it answers (None: the next call, whatever it is).
    method: str | None = None
    prefix: str = ""

    def answers(self, method: str, path: str) -> bool:
        return self.method in (None, method) and path.startswith(self.prefix)


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


@dataclass
class FakePaddleState:
    api_key: str
    tax_rate: Decimal
    customers: dict[str, list[str]] = field(default_factory=dict)
    addresses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    transactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    failures: deque[Failure] = field(default_factory=deque)
    stalls: deque[float] = field(default_factory=deque)
    holds: Holds = field(default_factory=Holds)
    invoice_counter: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class PaddleError(Exception):
    def __init__(self, status: int, code: str, detail: str, kind: str = "request_error") -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.kind = status, code, detail, kind


class FakePaddle:
    def __init__(
        self,
        *,
        api_key: str = "pdl_sdbx_apikey_fake",
        webhook_secret: str = "pdl_ntfset_fake_secret",  # noqa: S107
        tax_rate: Decimal = Decimal("0.19"),
    ) -> None:
        self.webhook_secret = webhook_secret
        self.state = FakePaddleState(api_key=api_key, tax_rate=tax_rate)
        self._server: LoopbackServer | None = None
        self._thread: threading.Thread | None = None

    # Lifecycle --------------------------------------------------------------------------

    def start(self) -> FakePaddle:
        state = self.state

        class Handler(_Handler):
            pass

        Handler.state = state
        self._server = LoopbackServer(Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def server(self) -> LoopbackServer:
        assert self._server is not None, "the fake is not running"
        return self._server

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def api_key(self) -> str:
        return self.state.api_key

    # Test controls ----------------------------------------------------------------------

    def add_customer(self, subscriptions: int = 0, addresses: int = 1) -> tuple[str, list[str]]:
        customer = paddle_id("ctm")
        subs = [paddle_id("sub") for _ in range(subscriptions)]
        with self.state.lock:
            self.state.customers[customer] = subs
            self.state.addresses[customer] = []
        for _ in range(addresses):
            self.add_address(customer)
        return customer, subs

    def add_address(self, customer: str, country: str = "DE") -> str:
        now = _now()
        address = {
            "id": paddle_id("add"),
            "customer_id": customer,
            "description": None,
            "first_line": None,
            "second_line": None,
            "city": None,
            "postal_code": None,
            "region": None,
            "country_code": country,
            "custom_data": None,
            "status": "active",
            "created_at": now,
            "updated_at": now,
            "import_meta": None,
        }
        with self.state.lock:
            self.state.addresses[customer].append(address)
        return str(address["id"])

    def fail_next(
        self,
        status: int = 500,
        code: str = "internal_error",
        detail: str = "An internal error occurred.",
        *,
        times: int = 1,
        kind: str = "api_error",
        method: str | None = None,
        prefix: str = "",
    ) -> None:
        """Fail the next ``times`` calls (only ``method`` calls whose path starts with
        ``prefix``, when given) with this error."""
        for _ in range(times):
            self.state.failures.append(Failure(status, code, detail, kind, method, prefix))

    def stall_next(self, seconds: float, *, times: int = 1) -> None:
        """Delay the next responses (longer than the client's timeout makes it time out)."""
        for _ in range(times):
            self.state.stalls.append(seconds)

    def hold_next(self, method: str, prefix: str, *, timeout: float = 300.0) -> Hold:
        """Hold the answer of the next ``method`` call whose path starts with ``prefix``
        once it has taken effect, until released (or ``timeout``)."""
        return self.state.holds.add(method, prefix, timeout)

    def calls(self, method: str, prefix: str) -> list[Recorded]:
        return [r for r in self.state.requests if r.method == method and r.path.startswith(prefix)]

    def transaction(self, transaction_id: str) -> dict[str, Any]:
        return self.state.transactions[transaction_id]

    def settle(self, transaction_id: str, status: str = "completed") -> dict[str, Any]:
        """Move a transaction on as Paddle would (completed, paid or past_due)."""
        with self.state.lock:
            transaction = self.state.transactions[transaction_id]
            transaction["status"] = status
            transaction["updated_at"] = _now()
            if status in ("completed", "paid") and transaction["invoice_number"] is None:
                transaction["invoice_number"] = self._next_invoice_number()
            copy: dict[str, Any] = json.loads(json.dumps(transaction))
            return copy

    def checkout(
        self, customer: str, amount: str, currency: str = "EUR", custom_data: Any = None
    ) -> str:
        """A transaction the customer starts through a checkout (Paddle.js lets the buyer's
        page pass any custom data): ``amount`` in the lowest unit. Returns its id."""
        body = {
            "customer_id": customer,
            "currency_code": currency,
            "custom_data": custom_data,
            "items": [_item("checkout", amount, currency)],
        }
        return str(_create_transaction(self.state, body)["id"])

    def bill(self, customer: str, amount: str, currency: str = "EUR") -> str:
        """A manually-collected, billed transaction of the customer's that is not ours (as
        another integration's would be): ``amount`` in the lowest unit. Returns its id."""
        body = {
            "customer_id": customer,
            "currency_code": currency,
            "collection_mode": "manual",
            "status": "billed",
            "address_id": self.state.addresses[customer][0]["id"],
            "billing_details": {
                "enable_checkout": False,
                "payment_terms": {"interval": "day", "frequency": 14},
                "purchase_order_number": None,
                "additional_information": None,
            },
            "items": [_item("another integration's", amount, currency)],
        }
        return str(_create_transaction(self.state, body)["id"])

    def _next_invoice_number(self) -> str:
        self.state.invoice_counter += 1
        return f"{datetime.now(UTC):%Y}-{self.state.invoice_counter:05d}"

    def subscription(self, subscription_id: str, customer_id: str, status: str) -> dict[str, Any]:
        """A subscription entity as Paddle sends it in ``subscription.*`` webhooks."""
        now = _now()
        return {
            "id": subscription_id,
            "status": status,
            "customer_id": customer_id,
            "address_id": paddle_id("add"),
            "business_id": None,
            "currency_code": "EUR",
            "created_at": now,
            "updated_at": now,
            "started_at": now,
            "first_billed_at": now,
            "next_billed_at": now,
            "paused_at": None,
            "canceled_at": None,
            "collection_mode": "automatic",
            "billing_details": None,
            "current_billing_period": {"starts_at": now, "ends_at": now},
            "billing_cycle": {"interval": "month", "frequency": 1},
            "scheduled_change": None,
            "items": [],
            "custom_data": None,
            "management_urls": None,
            "discount": None,
            "import_meta": None,
        }

    # Webhooks ---------------------------------------------------------------------------

    def event(
        self,
        event_type: str,
        data: dict[str, Any],
        *,
        occurred_at: str | None = None,
        event_id: str | None = None,
    ) -> bytes:
        document = {
            "event_id": event_id or paddle_id("evt"),
            "event_type": event_type,
            "occurred_at": occurred_at or _now(),
            "notification_id": paddle_id("ntf"),
            "data": data,
        }
        return json.dumps(document).encode()

    def signed_headers(
        self, body: bytes, *, timestamp: int | None = None, secret: str | None = None
    ) -> dict[str, str]:
        return {
            "Paddle-Signature": sign(body, secret or self.webhook_secret, timestamp),
            "Content-Type": "application/json",
        }


# The server side ------------------------------------------------------------------------


def _item(name: str, amount: str, currency: str) -> dict[str, Any]:
    """One non-catalogue item of ``amount`` (lowest unit), as a create's body has it."""
    return {
        "price": {
            "description": name,
            "unit_price": {"amount": amount, "currency_code": currency},
            "product": {"name": name, "tax_category": "standard"},
        },
        "quantity": 1,
    }


def _money(amount: Decimal) -> str:
    return str(int(amount.quantize(Decimal(1), rounding=ROUND_HALF_UP)))


def _totals(subtotal: Decimal, tax: Decimal, currency: str) -> dict[str, Any]:
    total = subtotal + tax
    return {
        "subtotal": _money(subtotal),
        "discount": "0",
        "tax": _money(tax),
        "total": _money(total),
        "credit": "0",
        "credit_to_balance": "0",
        "balance": _money(total),
        "grand_total": _money(total),
        "grand_total_tax": _money(tax),
        "fee": None,
        "earnings": None,
        "currency_code": currency,
    }


def _line_totals(subtotal: Decimal, tax: Decimal) -> dict[str, str]:
    return {
        "subtotal": _money(subtotal),
        "discount": "0",
        "tax": _money(tax),
        "total": _money(subtotal + tax),
    }


def _create_transaction(state: FakePaddleState, body: dict[str, Any]) -> dict[str, Any]:
    items = body.get("items")
    if not isinstance(items, list) or not items:
        raise PaddleError(400, "bad_request", "items: at least one item is required")
    customer = body.get("customer_id")
    if customer not in state.customers:
        raise PaddleError(404, "not_found", f"Customer {customer} not found.")
    currency = body.get("currency_code") or "USD"
    _check_collection(state, body, customer, currency)
    now = _now()
    lines, subtotal = [], Decimal(0)
    for item in items:
        price = item.get("price")
        if not isinstance(price, dict) or "product" not in price:
            raise PaddleError(400, "bad_request", "items[].price: a non-catalog price is required")
        amount = str(price["unit_price"]["amount"])
        if not amount.isdigit():
            raise PaddleError(400, "bad_request", "unit_price.amount must be an integer string")
        if price["unit_price"].get("currency_code") != currency:
            raise PaddleError(
                400, "bad_request", "unit price currency differs from the transaction"
            )
        quantity = int(item.get("quantity", 1))
        line_subtotal = Decimal(amount) * quantity
        line_tax = (line_subtotal * state.tax_rate).quantize(Decimal(1), rounding=ROUND_HALF_UP)
        subtotal += line_subtotal
        price_id, product_id = paddle_id("pri"), paddle_id("pro")
        product = {
            "id": product_id,
            "name": price["product"]["name"],
            "description": price["product"].get("description"),
            "type": "custom",
            "tax_category": price["product"]["tax_category"],
            "image_url": None,
            "custom_data": None,
            "status": "active",
            "import_meta": None,
            "created_at": now,
            "updated_at": now,
        }
        lines.append(
            (
                {
                    "price": {
                        "id": price_id,
                        "product_id": product_id,
                        "description": price["description"],
                        "name": price.get("name"),
                        "type": "custom",
                        "billing_cycle": None,
                        "trial_period": None,
                        "tax_mode": "account_setting",
                        "unit_price": price["unit_price"],
                        "unit_price_overrides": [],
                        "quantity": {"minimum": 1, "maximum": 100},
                        "status": "active",
                        "custom_data": None,
                        "import_meta": None,
                        "created_at": now,
                        "updated_at": now,
                    },
                    "quantity": quantity,
                    "proration": None,
                },
                {
                    "id": paddle_id("txnitm"),
                    "price_id": price_id,
                    "quantity": quantity,
                    "proration": None,
                    "tax_rate": str(state.tax_rate),
                    "unit_totals": _line_totals(Decimal(amount), line_tax / quantity),
                    "totals": _line_totals(line_subtotal, line_tax),
                    "product": product,
                },
            )
        )
    tax = (subtotal * state.tax_rate).quantize(Decimal(1), rounding=ROUND_HALF_UP)
    requested = body.get("status", "draft")
    # Zero-value transactions need no payment: Paddle completes them at once.
    status = "completed" if subtotal == 0 and requested == "billed" else requested
    transaction_id = paddle_id("txn")
    billed = status in ("billed", "completed")
    transaction = {
        "id": transaction_id,
        "status": status,
        "customer_id": customer,
        "address_id": body.get("address_id"),
        "business_id": None,
        "custom_data": body.get("custom_data"),
        "currency_code": currency,
        "origin": "api",
        "subscription_id": None,
        "invoice_id": paddle_id("inv") if billed else None,
        "invoice_number": None,
        "collection_mode": body.get("collection_mode", "automatic"),
        "discount_id": None,
        "billing_details": body.get("billing_details"),
        "billing_period": body.get("billing_period"),
        "items": [line[0] for line in lines],
        "details": {
            "tax_rates_used": [
                {"tax_rate": str(state.tax_rate), "totals": _line_totals(subtotal, tax)}
            ],
            "totals": _totals(subtotal, tax, currency),
            "adjusted_totals": None,
            "payout_totals": None,
            "adjusted_payout_totals": None,
            "line_items": [line[1] for line in lines],
        },
        "payments": [],
        "checkout": {"url": f"https://pay.paddle.test/checkout?_ptxn={transaction_id}"},
        "created_at": now,
        "updated_at": now,
        "billed_at": now if billed else None,
    }
    with state.lock:
        if billed:
            # Billed transactions are legal records: Paddle numbers them.
            state.invoice_counter += 1
            transaction["invoice_number"] = f"{datetime.now(UTC):%Y}-{state.invoice_counter:05d}"
        state.transactions[transaction_id] = transaction
    return transaction


_COMPARISONS: dict[str, Callable[[datetime, datetime], bool]] = {
    "": operator.eq,
    "[LT]": operator.lt,
    "[LTE]": operator.le,
    "[GT]": operator.gt,
    "[GTE]": operator.ge,
}


def _created_within(transaction: dict[str, Any], query: dict[str, list[str]]) -> bool:
    """Paddle's ``created_at`` filter: an RFC 3339 time, alone or with [LT], [LTE], [GT] or
    [GTE]."""
    created = datetime.fromisoformat(transaction["created_at"])
    for suffix, holds in _COMPARISONS.items():
        for value in query.get(f"created_at{suffix}", []):
            if not holds(created, datetime.fromisoformat(value)):
                return False
    return True


def _list_transactions(
    state: FakePaddleState, query: dict[str, list[str]], base_url: str
) -> dict[str, Any]:
    """List transactions, filtered by customer_id, collection_mode and created_at, ordered
    by id (newest first for id[DESC]: Paddle ids sort by creation, the fake's by insertion),
    a page at a time: ``after`` is the last id of the previous page, and
    ``meta.pagination.next`` the URL of the next page while ``has_more``."""
    customers = set(",".join(query.get("customer_id", [])).split(",")) - {""}
    mode = query.get("collection_mode", [None])[0]
    per_page = min(int(query.get("per_page", ["50"])[0]), 200)
    items = [
        transaction
        for transaction in state.transactions.values()
        if (not customers or transaction["customer_id"] in customers)
        and (mode is None or transaction["collection_mode"] == mode)
        and _created_within(transaction, query)
    ]
    if query.get("order_by", ["id[ASC]"])[0].lower() == "id[desc]":
        items.reverse()
    after = query.get("after", [None])[0]
    if after is not None:
        ids = [transaction["id"] for transaction in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    page = items[:per_page]
    has_more = len(items) > per_page
    following = {key: values[0] for key, values in query.items()}
    following["after"] = page[-1]["id"] if page else ""
    return {
        "data": page,
        "meta": {
            "request_id": secrets.token_hex(16),
            "pagination": {
                "per_page": per_page,
                "next": f"{base_url}/transactions?{urlencode(following)}",
                "has_more": has_more,
                "estimated_total": len(items),
            },
        },
    }


def _check_collection(
    state: FakePaddleState, body: dict[str, Any], customer: str, currency: str
) -> None:
    """Paddle's rules for manually-collected and billed transactions."""
    if body.get("collection_mode") == "manual":
        if not body.get("billing_details"):
            raise PaddleError(
                400,
                "transaction_billing_details_object_required",
                "billing_details must be non null if collection_mode=manual",
            )
        if currency not in ("USD", "EUR", "GBP"):
            raise PaddleError(400, "bad_request", "currency_code must be USD, EUR or GBP")
    if body.get("status") == "billed":
        known = {address["id"] for address in state.addresses.get(customer, [])}
        # Billed needs ready first: items, a customer and an address.
        if body.get("address_id") not in known:
            raise PaddleError(
                400, "transaction_status_must_be_ready", "Transaction status needs to be ready"
            )


def _addresses(state: FakePaddleState, customer: str, query: dict[str, list[str]]) -> Any:
    if customer not in state.customers:
        raise PaddleError(404, "not_found", f"Customer {customer} not found.")
    statuses = set(",".join(query.get("status", [])).split(",")) - {""}
    return [
        address
        for address in state.addresses[customer]
        if not statuses or address["status"] in statuses
    ]


def _invoice_link(state: FakePaddleState, transaction_id: str) -> dict[str, Any]:
    transaction = state.transactions.get(transaction_id)
    if transaction is None:
        raise PaddleError(404, "not_found", f"Transaction {transaction_id} not found.")
    if transaction["details"]["totals"]["total"] == "0":
        raise PaddleError(
            404, "not_found", "Invoice PDFs aren't available for zero-value transactions."
        )
    if transaction["status"] not in ("billed", "past_due", "paid", "completed"):
        raise PaddleError(
            400, "transaction_status_must_be_billed_or_completed", "Transaction is not billed."
        )
    token = secrets.token_urlsafe(16)
    return {"url": f"{INVOICE_HOST}/invoices/{transaction_id}.pdf?token={token}&expires=3600"}


def _portal_session(state: FakePaddleState, customer: str, body: dict[str, Any]) -> dict[str, Any]:
    if customer not in state.customers:
        raise PaddleError(404, "not_found", f"Customer {customer} not found.")
    subscriptions = body.get("subscription_ids") or []
    for subscription in subscriptions:
        if subscription not in state.customers[customer]:
            raise PaddleError(400, "bad_request", f"Subscription {subscription} not found.")
    token = secrets.token_urlsafe(16)
    base = f"{PORTAL_HOST}/cpl_fake/{customer}"
    return {
        "id": paddle_id("cpls"),
        "customer_id": customer,
        "urls": {
            "general": {"overview": f"{base}?action=overview&token={token}"},
            "subscriptions": [
                {
                    "id": subscription,
                    "cancel_subscription": f"{base}/{subscription}/cancel?token={token}",
                    "update_subscription_payment_method": (
                        f"{base}/{subscription}/update-payment-method?token={token}"
                    ),
                }
                for subscription in subscriptions
            ],
        },
        "created_at": _now(),
    }


class _Handler(QuietHandler):
    state: FakePaddleState

    def _reply(self, status: int, document: dict[str, Any]) -> None:
        payload = json.dumps(document).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, error: PaddleError) -> None:
        self._reply(
            error.status,
            {
                "error": {
                    "type": error.kind,
                    "code": error.code,
                    "detail": error.detail,
                    "documentation_url": f"{DOCS}/shared/{error.code}",
                },
                "meta": {"request_id": secrets.token_hex(16)},
            },
        )

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw) if raw else {}

    def _handle(self, method: str) -> None:
        state = self.state
        try:
            body = self._body() if method == "POST" else None
        except ValueError:
            self._error(PaddleError(400, "bad_request", "Invalid JSON body."))
            return
        path, _, query = self.path.partition("?")
        state.requests.append(Recorded(method, self.path, body, dict(self.headers.items())))
        if state.stalls:
            time.sleep(state.stalls.popleft())
        try:
            self._authenticate()
            failure = self._failure(method, path)
            if failure is not None:
                raise PaddleError(failure.status, failure.code, failure.detail, failure.type)
            answer = self._route(method, path, query, body)
            hold = self._hold(method, path)
        except PaddleError as error:
            self._error(error)
            return
        try:
            self._reply(200 if method == "GET" else 201, answer)
        except (BrokenPipeError, ConnectionResetError):
            return
        finally:
            if hold is not None:
                hold.answered.set()

    def _failure(self, method: str, path: str) -> Failure | None:
        with self.state.lock:
            failure = next((f for f in self.state.failures if f.answers(method, path)), None)
            if failure is not None:
                self.state.failures.remove(failure)
        return failure

    def _hold(self, method: str, path: str) -> Hold | None:
        hold = self.state.holds.take(method, path)
        if hold is not None:
            hold.wait()
        return hold

    def _authenticate(self) -> None:
        header = self.headers.get("Authorization")
        if not header:
            raise PaddleError(403, "authentication_missing", "Authentication header missing.")
        if header != f"Bearer {self.state.api_key}":
            raise PaddleError(403, "authentication_malformed", "API key is not valid.")

    def _route(self, method: str, path: str, query: str, body: Any) -> dict[str, Any]:
        parts = [part for part in path.split("/") if part]
        state = self.state
        if method == "GET" and parts == ["transactions"]:
            base_url = f"http://{self.headers.get('Host', '127.0.0.1')}"
            return _list_transactions(state, parse_qs(query), base_url)
        if method == "POST" and parts == ["transactions"]:
            data = _create_transaction(state, body)
        elif method == "GET" and len(parts) == 2 and parts[0] == "transactions":
            if parts[1] not in state.transactions:
                raise PaddleError(404, "not_found", f"Transaction {parts[1]} not found.")
            data = state.transactions[parts[1]]
        elif method == "GET" and len(parts) == 3 and parts[::2] == ["transactions", "invoice"]:
            data = _invoice_link(state, parts[1])
        elif method == "GET" and len(parts) == 3 and parts[::2] == ["customers", "addresses"]:
            data = _addresses(state, parts[1], parse_qs(query))
        elif (
            method == "POST" and len(parts) == 3 and parts[::2] == ["customers", "portal-sessions"]
        ):
            data = _portal_session(state, parts[1], body)
        else:
            raise PaddleError(404, "not_found", f"No route for {method} {path}.")
        return {"data": data, "meta": {"request_id": secrets.token_hex(16)}}

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")
