"""Operator commands: `tenantplane billing run|link` and `tenantplane tenant cancel|credit`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from tenantplane.billing import service
from tenantplane.billing.context import BillingContext
from tenantplane.billing.cycle import cancel_tenant, close_ended_periods
from tenantplane.billing.models import Invoice
from tenantplane.billing.pricing import PricingError
from tenantplane.billing.reconciler import InvoiceReconciler
from tenantplane.billing.repository import BillingRepository
from tenantplane.billing.schemas import money
from tenantplane.config import Settings
from tenantplane.db.base import utcnow
from tenantplane.db.engine import Database
from tenantplane.http.errors import ApiError
from tenantplane.logging import configure_logging
from tenantplane.reconcile import ReconcilerRunner

billing_app = typer.Typer(
    help="Run the billing cycle and link Paddle customers.", no_args_is_help=True
)
console = Console()
errors = Console(stderr=True)
T = TypeVar("T")

NowOption = Annotated[
    str | None,
    typer.Option("--now", help="Act as of this RFC 3339 instant (default: the current time)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


def parse_now(value: str | None) -> datetime:
    if value is None:
        return utcnow()
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise typer.BadParameter("expected an RFC 3339 timestamp", param_hint="--now") from None
    if parsed.tzinfo is None:
        raise typer.BadParameter("the timestamp needs a time zone (Z)", param_hint="--now")
    return parsed


@dataclass
class Outcome:
    issued: list[dict[str, str]] = field(default_factory=list)
    charges_attempted: int = 0


def _summary(invoice: Invoice) -> dict[str, str]:
    return {
        "name": invoice.name,
        "subtotal": money(invoice.subtotal),
        "creditsApplied": money(invoice.credits_applied),
        "currency": invoice.currency,
    }


def _run(work: Callable[[Database, BillingContext], Awaitable[T]]) -> T:
    settings = Settings()
    # Logs go to stderr: stdout carries the command's result (one JSON object with --json).
    configure_logging(settings.log_level, settings.log_json)

    async def main() -> T:
        database = Database.connect(settings.database_url)
        try:
            return await work(database, BillingContext.from_settings(settings))
        finally:
            await database.dispose()

    try:
        return asyncio.run(main())
    except ApiError as exc:
        errors.print(f"[red]error:[/red] {exc.error}")
        raise typer.Exit(1) from exc
    except PricingError as exc:
        errors.print(f"[red]error in the price list:[/red] {exc}")
        raise typer.Exit(1) from exc


async def _submit_charges(database: Database, context: BillingContext) -> int:
    """Charge every uncharged Draft invoice now (failures are retried by the reconciler)."""
    if not context.provider.configured:
        return 0
    async with database.transaction() as session:
        await BillingRepository.from_session(session).rearm_drafts(utcnow())
    return await ReconcilerRunner(database, InvoiceReconciler(context)).run_once()


def _print(outcome: Outcome, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    document = {"issued": outcome.issued, "chargesAttempted": outcome.charges_attempted}
    document.update(extra or {})
    if as_json:
        typer.echo(json.dumps(document))
        return
    for invoice in outcome.issued:
        console.print(
            f"issued {invoice['name']}: subtotal {invoice['subtotal']} {invoice['currency']}, "
            f"credits {invoice['creditsApplied']}"
        )
    console.print(
        f"{len(outcome.issued)} invoice(s) issued, {outcome.charges_attempted} charge(s) submitted"
    )


@billing_app.command("run")
def billing_run(now: NowOption = None, as_json: JsonOption = False) -> None:
    """Close every billing period ended by --now, issue invoices and submit charges.
    Idempotent: a second run issues nothing new."""
    instant = parse_now(now)

    async def work(database: Database, context: BillingContext) -> Outcome:
        outcome = Outcome()
        async with database.transaction() as session:
            issued = await close_ended_periods(session, context, instant)
            outcome.issued = [_summary(invoice) for invoice in issued]
        outcome.charges_attempted = await _submit_charges(database, context)
        return outcome

    _print(_run(work), as_json)


@billing_app.command("link")
def billing_link(
    tenant: str,
    customer: Annotated[str, typer.Option(help="Paddle customer id (ctm_…).")],
    subscription: Annotated[
        str | None, typer.Option(help="Paddle subscription id (sub_…), for the portal.")
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="Paddle address id (add_…) used for tax on charges.")
    ] = None,
) -> None:
    """Link a tenant to its Paddle customer (and optionally subscription and address)."""

    async def work(database: Database, context: BillingContext) -> int:
        async with database.transaction() as session:
            await service.link_profile(session, tenant, customer, subscription, address)
        return await _submit_charges(database, context)

    attempted = _run(work)
    console.print(f"tenant {tenant} linked to Paddle customer {customer}")
    if attempted:
        console.print(f"{attempted} pending charge(s) submitted")


def tenant_cancel(name: str, now: NowOption = None, as_json: JsonOption = False) -> None:
    """Cancel a tenant's billing: issue its final invoice (usage since the last invoice)."""
    instant = parse_now(now)

    async def work(database: Database, context: BillingContext) -> tuple[Outcome, str]:
        outcome = Outcome()
        async with database.transaction() as session:
            tenant = await service.tenant_named(session, name)
            issued = await cancel_tenant(session, context, tenant, instant)
            outcome.issued = [_summary(invoice) for invoice in issued]
            final_name = issued[-1].name
        outcome.charges_attempted = await _submit_charges(database, context)
        return outcome, final_name

    outcome, final_name = _run(work)
    _print(outcome, as_json, {"final": final_name})


def tenant_credit(
    name: str,
    amount: Annotated[str, typer.Argument(help="Amount in the plan's currency, e.g. 25.00.")],
    note: Annotated[str, typer.Option(help="Why the credit was granted.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Grant promotional credit; it is deducted from the next invoices' subtotals."""

    async def work(database: Database, context: BillingContext) -> str:
        async with database.transaction() as session:
            return money(await service.grant_credit(session, name, amount, note))

    balance = _run(work)
    if as_json:
        typer.echo(json.dumps({"tenant": name, "creditBalance": balance}))
        return
    console.print(f"tenant {name}: credit balance {balance}")
