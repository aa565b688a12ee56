"""Operator commands: `tenantplane billing run|link` and `tenantplane tenant cancel|credit`."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, Annotated, Any, TypeVar

import typer

from tenantplane.alerting.reconciler import AlertingReconciler
from tenantplane.billing import service
from tenantplane.billing.context import BillingContext
from tenantplane.billing.cycle import close_batch_periods, issued_events, next_batch
from tenantplane.billing.models import Invoice
from tenantplane.billing.pricing import PricingError
from tenantplane.billing.reconciler import InvoiceReconciler
from tenantplane.billing.repository import BillingRepository
from tenantplane.billing.schemas import money
from tenantplane.cli_support import (
    EXIT_USAGE,
    CliError,
    JsonOption,
    echo_result,
    load_settings,
    run_async,
)
from tenantplane.db.base import parse_rfc3339
from tenantplane.db.engine import Database
from tenantplane.event.log import append, append_all, operator_event
from tenantplane.providers.alerting.factory import backend_from_settings
from tenantplane.reconcile import ReconcilerRunner
from tenantplane.tenant import lifecycle
from tenantplane.tenant.lifecycle import Cancellation

billing_app = typer.Typer(
    help="Run the billing cycle and link Paddle customers.", no_args_is_help=True
)
T = TypeVar("T")

NowOption = Annotated[
    str | None,
    typer.Option("--now", help="Act as of this RFC 3339 instant (default: the current time)."),
]


def parse_now(value: str | None) -> datetime | None:
    """The instant --now names; None (not given): the database's now, read by the caller."""
    if value is None:
        return None
    try:
        parsed = parse_rfc3339(value)
    except ValueError:
        raise typer.BadParameter(
            "expected an RFC 3339 timestamp with its time zone (Z)", param_hint="--now"
        ) from None
    return parsed


@dataclass
class Outcome:
    """What a command issued. The invoices' summaries wait in a temporary file, one JSON
    line each, until the result is printed: a run over every tenant issues an invoice for
    each, and its memory must not grow with them."""

    spool: IO[str]
    issued: int = 0
    charges_attempted: int = 0

    def add(self, invoices: Iterable[Invoice]) -> None:
        for invoice in invoices:
            self.spool.write(json.dumps(_summary(invoice)) + "\n")
            self.issued += 1

    def summaries(self) -> Iterator[dict[str, str]]:
        self.spool.seek(0)
        for line in self.spool:
            yield json.loads(line)


def _summary(invoice: Invoice) -> dict[str, str]:
    return {
        "name": invoice.name,
        "subtotal": money(invoice.subtotal),
        "creditsApplied": money(invoice.credits_applied),
        "currency": invoice.currency,
    }


def _run(work: Callable[[Database, BillingContext], Awaitable[T]]) -> T:
    settings = load_settings()

    async def main() -> T:
        database = Database.from_settings(settings)
        try:
            context = BillingContext.from_settings(settings)
            try:
                return await work(database, context)
            finally:
                await context.provider.aclose()
        finally:
            await database.dispose()

    try:
        return run_async(settings, main())
    except PricingError as exc:
        # The price list is configuration: a bad file is a bad setting.
        raise CliError(
            "INVALID_SETTING",
            f"TENANTPLANE_PLANS_FILE: the price list is invalid: {exc}",
            EXIT_USAGE,
        ) from exc


async def _submit_charges(database: Database, context: BillingContext) -> int:
    """Charge every uncharged Draft invoice now (failures are retried by the reconciler)."""
    if not context.provider.configured:
        return 0
    async with database.transaction() as session:
        await BillingRepository.from_session(session).rearm_drafts(await database.clock.now())
    return await ReconcilerRunner(database, InvoiceReconciler(context)).run_once()


def _print(outcome: Outcome, as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """The result as `echo_result` prints it (JSON: ``{"issued": [...], "chargesAttempted":
    n, **extra}``), written a summary at a time from the spool."""
    summaries = outcome.summaries()
    if as_json:
        typer.echo('{"issued": [', nl=False)
        for index, invoice in enumerate(summaries):
            typer.echo((", " if index else "") + json.dumps(invoice), nl=False)
        rest = {"chargesAttempted": outcome.charges_attempted, **(extra or {})}
        typer.echo("], " + json.dumps(rest)[1:])
        return
    for invoice in summaries:
        typer.echo(
            f"issued {invoice['name']}: subtotal {invoice['subtotal']} {invoice['currency']}, "
            f"credits {invoice['creditsApplied']}"
        )
    typer.echo(
        f"{outcome.issued} invoice(s) issued, {outcome.charges_attempted} charge(s) submitted"
    )


@billing_app.command("run")
def billing_run(now: NowOption = None, as_json: JsonOption = False) -> None:
    """Close every billing period ended by --now, issue invoices and submit charges.
    Idempotent: a second run issues nothing new."""
    given = parse_now(now)

    async def work(database: Database, context: BillingContext) -> Outcome:
        instant = given or await database.clock.now()
        outcome = Outcome(spool)
        # A transaction per batch: what a run committed stays issued if it is stopped, and
        # the next run (idempotent) carries on from there.
        after = 0
        while True:
            async with database.transaction() as session:
                batch = await next_batch(session, after)
                if batch:
                    issued = await close_batch_periods(session, context, batch, instant)
                    await append_all(session, issued_events(issued))
                    outcome.add(issued)
            if not batch:
                break
            after = batch[-1].id
        outcome.charges_attempted = await _submit_charges(database, context)
        return outcome

    with tempfile.TemporaryFile("w+") as spool:
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
    as_json: JsonOption = False,
) -> None:
    """Link a tenant to its Paddle customer (and optionally subscription and address)."""

    async def work(database: Database, context: BillingContext) -> int:
        async with database.transaction() as session:
            profile = await service.link_profile(session, tenant, customer, subscription, address)
            link = operator_event("billing.profile.link", "tenant", tenant, customerID=customer)
            await append(session, profile.tenant_id, link)
        return await _submit_charges(database, context)

    attempted = _run(work)
    text = f"tenant {tenant} linked to Paddle customer {customer}"
    if attempted:
        text += f"\n{attempted} pending charge(s) submitted"
    document = {
        "tenant": tenant,
        "customerID": customer,
        "subscriptionID": subscription,
        "addressID": address,
        "chargesAttempted": attempted,
    }
    echo_result(as_json, document, text)


def tenant_cancel(name: str, now: NowOption = None, as_json: JsonOption = False) -> None:
    """Cancel a tenant: read-only for good, its clusters deleted, its secrets' sync and its
    alerting configuration withdrawn, and its final invoice issued (usage since the last
    invoice, up to --now)."""
    given = parse_now(now)
    settings = load_settings()
    try:
        alerting = backend_from_settings(settings)
    except ValueError as exc:  # a backend named without its settings
        raise CliError("INVALID_SETTING", str(exc), EXIT_USAGE) from None

    async def work(database: Database, context: BillingContext) -> tuple[Outcome, Cancellation]:
        instant = given or await database.clock.now()
        outcome = Outcome(spool)
        async with database.transaction() as session:
            cancellation = await lifecycle.cancel(
                session, name, instant, billing=context, alerting=alerting
            )
            outcome.add(cancellation.invoices)
        outcome.charges_attempted = await _submit_charges(database, context)
        if cancellation.alerting_withdrawn:
            # Committed: take the configuration off the backend now rather than wait for a
            # running reconciler (one that cannot reach it retries).
            withdrawal = AlertingReconciler(
                alerting,
                database,
                settings.keyring(),
                backend_timeout_seconds=settings.alerting_backend_timeout_seconds,
            )
            await ReconcilerRunner(database, withdrawal).run_once()
        await alerting.aclose()
        return outcome, cancellation

    with tempfile.TemporaryFile("w+") as spool:
        outcome, cancellation = _run(work)
        _print(
            outcome,
            as_json,
            {
                "final": cancellation.invoices[-1].name,
                "state": cancellation.tenant.state.value,
                "clustersDeleted": cancellation.clusters_deleted,
                "secretsWithdrawn": cancellation.secrets_withdrawn,
                "alertingWithdrawn": cancellation.alerting_withdrawn,
            },
        )
    if not as_json:
        alerting_outcome = (
            "withdrawn" if cancellation.alerting_withdrawn else "not applied anywhere"
        )
        typer.echo(
            f"tenant {name} cancelled: {len(cancellation.clusters_deleted)} cluster(s) being "
            f"deleted, sync of {len(cancellation.secrets_withdrawn)} secret(s) withdrawn, "
            f"alerting configuration {alerting_outcome}"
        )


def tenant_credit(
    name: str,
    amount: Annotated[str, typer.Argument(help="Amount in the plan's currency, e.g. 25.00.")],
    note: Annotated[str, typer.Option(help="Why the credit was granted.")] = "",
    as_json: JsonOption = False,
) -> None:
    """Grant promotional credit; it is deducted from the next invoices' subtotals."""

    async def work(database: Database, context: BillingContext) -> str:
        async with database.transaction() as session:
            balance = await service.grant_credit(session, name, amount, note)
            found = await BillingRepository.from_session(session).tenant_by_name(name)
            assert found is not None  # grant_credit found it
            granted = operator_event(
                "billing.credit.grant", "tenant", name, amount=money(service.parse_credit(amount))
            )
            await append(session, found.id, granted)
            return money(balance)

    balance = _run(work)
    echo_result(
        as_json,
        {"tenant": name, "creditBalance": balance},
        f"tenant {name}: credit balance {balance}",
    )
