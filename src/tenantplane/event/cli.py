"""`tenantplane events verify|export`: the operator checks a tenant's chain and hands its
events to a log pipeline."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cli_support import (
    CliError,
    JsonOption,
    load_settings,
    run_async,
    run_in_transaction,
)
from tenantplane.db.base import parse_rfc3339
from tenantplane.db.engine import Database
from tenantplane.event import service
from tenantplane.event.repository import EventRepository
from tenantplane.tenant.service import get_by_name

app = typer.Typer(help="Check and export tenants' event streams.", no_args_is_help=True)

EXIT_BROKEN = 1


@app.command("verify")
def verify(tenant: str, as_json: JsonOption = False) -> None:
    """Check TENANT's hash chain from its oldest kept event to its head; name the first
    event that does not follow from the one before it (exit 1)."""
    settings = load_settings()

    async def work(session: AsyncSession) -> service.Verification:
        found = await get_by_name(session, tenant)
        return await service.verify(session, found.id)

    checked = run_in_transaction(settings, work)
    broken = checked.broken
    if as_json:
        document: dict[str, object] = {
            "tenant": tenant,
            "verified": checked.verified,
            "events": checked.events,
            "firstSeq": checked.first_seq,
            "lastSeq": checked.last_seq,
        }
        if broken is not None:
            document["firstBreak"] = {
                "position": broken.seq,
                "eventId": broken.event_id or None,
                "reason": broken.reason,
            }
        typer.echo(json.dumps(document))
    elif broken is None:
        typer.echo(f"the event chain of tenant {tenant} verifies: {checked.events} events")
    else:
        event = f" (event {broken.event_id})" if broken.event_id else ""
        typer.echo(
            f"the event chain of tenant {tenant} is broken at position {broken.seq}{event}: "
            f"{broken.reason}",
            err=True,
        )
    if broken is not None:
        raise typer.Exit(EXIT_BROKEN)


def _instant(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        raise CliError(
            "INVALID_ARGUMENT", "--since must be an RFC 3339 timestamp with an offset"
        ) from None


@app.command("export")
def export(
    tenant: str,
    since: Annotated[
        str | None, typer.Option(help="RFC 3339: only events at or after this time.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="One JSON object per line (with its hash).")
    ] = False,
) -> None:
    """Write TENANT's events, oldest first: JSON lines with --json (for a log pipeline),
    else one readable line each."""
    settings = load_settings()
    start = _instant(since)

    async def work() -> None:
        database = Database.from_settings(settings)
        try:
            async with database.transaction() as session:
                found = await get_by_name(session, tenant)
                async for link in EventRepository(session).links(found.id, since=start):
                    typer.echo(_line(link.body, link.hash, as_json))
        finally:
            await database.dispose()

    run_async(settings, work())


def _line(body: str, digest: str, as_json: bool) -> str:
    event = json.loads(body)
    if as_json:
        return json.dumps({**event, "hash": digest}, separators=(",", ":"), ensure_ascii=False)
    actor = event["actor"]
    who = actor.get("email") or actor.get("id") or actor["kind"]
    resource = f"{event['resource']['kind']}/{event['resource']['name']}"
    return f"{event['time']} {event['type']} {event['action']} {resource} by {who}"
