"""An invoice as an admin reads it in the browser: listed Paid, opened with its line items,
and its receipt downloaded from the payment provider: Paddle's PDF behind a short-lived link
that the console asks Paddle for at the click and redirects the browser to (billing.py makes
the invoice; receipts.py is the provider's receipt host). The provider's origin is allowed
for that step only, as the identity provider's is during a sign-in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import StorageState, expect

from tests.console.browser.contexts import OpenContext
from tests.console.browser.receipts import RECEIPT, ReceiptHost
from tests.console.browser.steps import ConsoleServer
from tests.console.browser.traffic import Traffic
from tests.fakes.paddle import INVOICE_HOST, FakePaddle

pytestmark = pytest.mark.console


def test_an_invoice_is_opened_and_its_receipt_downloaded_from_the_provider(
    open_context: OpenContext,
    admin_state: StorageState,
    console_server: ConsoleServer,
    invoice: dict[str, Any],
    paddle: FakePaddle,
    receipts: ReceiptHost,
    traffic: Traffic,
    tmp_path: Path,
) -> None:
    # The receipt host's certificate is its own (receipts.py).
    page = open_context(admin_state, ignore_https_errors=True).new_page()
    name, status = invoice["name"], invoice["status"]
    total = f"{status['total']} {status['currency']}"
    page.goto(console_server.tenant_url("invoices"))
    row = page.locator(f'tr[data-invoice="{name}"]')
    expect(row.locator("td").nth(2)).to_have_text("Paid")
    expect(row.locator("td").nth(3)).to_have_text(total)
    row.get_by_role("link", name=name).click()

    detail = console_server.tenant_url(f"invoices/{name}")
    expect(page).to_have_url(detail)
    expect(page.get_by_role("heading", level=1)).to_have_text(f"{name} Paid")
    expect(page.locator("dt:text-is('Total') + dd")).to_have_text(total)
    expect(page.locator("dt:text-is('Invoice number') + dd")).to_have_text(
        str(status["providerInvoiceNumber"])
    )
    expect(page.locator("tr[data-line]")).to_have_count(len(status["lineItems"]))
    expect(page.locator('tr[data-line="platform"] td').last).to_have_text(
        next(item["amount"] for item in status["lineItems"] if item["kind"] == "platform")
    )

    transaction = str(invoice["providerTransactionID"])
    links_asked = len(paddle.calls("GET", f"/transactions/{transaction}/invoice"))
    with traffic.allowing(INVOICE_HOST), page.expect_download() as downloading:
        page.get_by_role("link", name="Download the receipt (PDF)").click()
    download = downloading.value
    receipt = tmp_path / download.suggested_filename
    download.save_as(receipt)

    # The console asked Paddle for a fresh link at the click, and the browser followed it
    # to the provider, whose PDF it saved.
    assert len(paddle.calls("GET", f"/transactions/{transaction}/invoice")) == links_asked + 1
    link = f"/invoices/{transaction}.pdf?token="
    assert re.match(f"^{re.escape(INVOICE_HOST + link)}[^&]+&expires=\\d+$", download.url)
    assert [path for path in receipts.asked if path.startswith(link)] == [
        download.url.removeprefix(INVOICE_HOST)
    ]
    assert receipt.read_bytes() == RECEIPT
    # A download: the invoice stays on the screen.
    expect(page).to_have_url(detail)
