"""tpctl webhooks: subscriptions to the tenant's events, and their deliveries."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tenantplane_client import models as m
from tenantplane_client.cli.common import (
    OutputOption,
    client,
    detailed,
    group,
    handled,
)
from tenantplane_client.cli.output import Output, labelled, render, say, stderr

webhooks_app = group("Webhooks: the tenant's events sent, signed, to a URL (admins).")

WEBHOOK_COLUMNS = ("id", "url", "events", "enabled", "description", "disabledReason")
DELIVERY_COLUMNS = (
    "id",
    "eventType",
    "state",
    "attempts",
    "lastStatusCode",
    "lastError",
    "nextAttemptAt",
    "createdAt",
)
EventOption = Annotated[
    list[str] | None,
    typer.Option(
        "--event",
        help="An action (invoice.past_due) or a prefix ending in * (cluster.*) to send; repeat "
        "for several",
    ),
]
DescriptionOption = Annotated[str | None, typer.Option(help="What it is for")]


def _with_secret(webhook: m.WebhookWithSecret, output: Output | None) -> None:
    """A webhook with its new signing secret, and the warning that it is never shown again."""
    render(webhook, output, ("id", "url", "events", "enabled", "secret"))
    stderr.print(
        labelled(
            "Warning:",
            "yellow",
            "the signing secret is shown this once and cannot be read again: store it where the "
            "receiver verifies signatures (tpctl webhooks rotate-secret makes a new one)",
        )
    )


@webhooks_app.command("list")
@handled
def webhooks_list(output: OutputOption = None) -> None:
    """List the tenant's webhooks (never their secrets)."""
    with client() as api:
        render(api.webhooks.list(), output, WEBHOOK_COLUMNS)


@webhooks_app.command("get")
@handled
def webhooks_get(webhook_id: str, output: OutputOption = None) -> None:
    """Show one webhook (never its secret)."""
    with client() as api:
        render(api.webhooks.get(webhook_id), output, WEBHOOK_COLUMNS)


@webhooks_app.command("create")
@handled
def webhooks_create(
    url: Annotated[str, typer.Option(help="Where to send: http:// or https://")],
    event: EventOption = None,
    description: DescriptionOption = None,
    enabled: Annotated[bool, typer.Option(help="Send from now on (else: created disabled)")] = True,
    output: OutputOption = None,
) -> None:
    """Create a webhook; its signing secret (whsec_…) is printed this once."""
    if not event:
        raise typer.BadParameter("give at least one --event (an action, or a prefix ending in *)")
    body: dict[str, Any] = {"url": url, "events": event, "enabled": enabled}
    if description is not None:
        body["description"] = description
    with client() as api:
        _with_secret(api.webhooks.create(body), output)


@webhooks_app.command("update")
@handled
def webhooks_update(
    webhook_id: str,
    url: Annotated[str | None, typer.Option(help="A new URL")] = None,
    event: EventOption = None,
    description: DescriptionOption = None,
    enabled: Annotated[
        bool | None,
        typer.Option(
            "--enable/--disable", help="Send again (the events from now on), or stop sending"
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Change a webhook's URL, events (--event replaces them all), description or whether it
    is enabled."""
    body: dict[str, Any] = {}
    for field, value in (
        ("url", url),
        ("events", event or None),
        ("description", description),
        ("enabled", enabled),
    ):
        if value is not None:
            body[field] = value
    if not body:
        raise typer.BadParameter("give --url, --event, --description, --enable or --disable")
    with client() as api:
        render(api.webhooks.update(webhook_id, body), output, WEBHOOK_COLUMNS)


@webhooks_app.command("delete")
@handled
def webhooks_delete(webhook_id: str) -> None:
    """Delete a webhook and its deliveries."""
    with client() as api:
        api.webhooks.delete(webhook_id)
    say(f"Webhook {webhook_id} deleted")


@webhooks_app.command("rotate-secret")
@handled
def webhooks_rotate_secret(webhook_id: str, output: OutputOption = None) -> None:
    """Make a new signing secret, printed this once; the old one signs too for 24 hours."""
    with client() as api:
        _with_secret(api.webhooks.rotate_secret(webhook_id), output)


@webhooks_app.command("ping")
@handled
def webhooks_ping(webhook_id: str, output: OutputOption = None) -> None:
    """Send a signed webhook.ping message; prints its delivery (follow it with
    `tpctl webhooks deliveries ID DELIVERY`)."""
    with client() as api:
        render(api.webhooks.ping(webhook_id), output, DELIVERY_COLUMNS)


@webhooks_app.command("deliveries")
@handled
def webhooks_deliveries(
    webhook_id: str,
    delivery_id: Annotated[
        str | None, typer.Argument(help="One delivery, with every attempt (else: the list)")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="At most this many, newest first (else: every one)")
    ] = None,
    output: OutputOption = None,
) -> None:
    """List a webhook's deliveries, newest first, or show one with its attempts."""
    with client() as api:
        if delivery_id is None:
            listed = api.webhooks.list_deliveries(webhook_id, limit=limit)
            render(listed, output, DELIVERY_COLUMNS)
        else:
            render(api.webhooks.get_delivery(webhook_id, delivery_id), detailed(output))


@webhooks_app.command("redeliver")
@handled
def webhooks_redeliver(webhook_id: str, delivery_id: str, output: OutputOption = None) -> None:
    """Send a delivery's message again (the same webhook-id and body) as a new delivery."""
    with client() as api:
        render(api.webhooks.redeliver(webhook_id, delivery_id), output, DELIVERY_COLUMNS)
