"""tpctl events: the tenant's event stream, listed or followed."""

from __future__ import annotations

import enum
import json
import os
import sys
from collections.abc import Iterable
from typing import Annotated, Any

import typer
import yaml

from tenantplane_client import following
from tenantplane_client import models as m
from tenantplane_client.cli.common import OutputOption, client, group, handled
from tenantplane_client.cli.output import Output, default_output, plain, render, say

events_app = group("The tenant's audit and platform events.")

# What `events list` shows without --limit (the API's default page).
DEFAULT_LIMIT = 100
# --follow waits at most this many times --interval between polls while nothing arrives.
IDLE_FACTOR = 10
EVENT_COLUMNS = ("time", "type", "action", "kind", "name", "actor", "status")
# The widths of the columns --follow prints line by line (a wider value widens its line).
FOLLOW_WIDTHS = (24, 8, 28, 12, 20, 24, 0)


class EventType(enum.StrEnum):
    audit = "audit"
    platform = "platform"


def _actor(actor: m.EventActor) -> str:
    """What --actor takes (an email or a key id), or the kind (system, operator)."""
    return actor.email or actor.id or actor.kind


def _row(event: m.EventRead) -> dict[str, Any]:
    return {
        "time": event.time,
        "type": event.type,
        "action": event.action,
        "kind": event.resource.kind,
        "name": event.resource.name,
        "actor": _actor(event.actor),
        "status": event.status,
    }


def _aligned(cells: Iterable[str]) -> str:
    padded = (cell.ljust(width) for cell, width in zip(cells, FOLLOW_WIDTHS, strict=True))
    return "  ".join(padded).rstrip()


def _print_event(event: m.EventRead, output: Output) -> None:
    """One event as --follow prints it: a JSON line, a YAML document, or a table line."""
    if output is Output.json:
        text = json.dumps(plain(event), separators=(",", ":"))
    elif output is Output.yaml:
        text = "---\n" + yaml.safe_dump(plain(event), sort_keys=False).rstrip("\n")
    else:
        text = _aligned("" if value is None else str(value) for value in _row(event).values())
    print(text, flush=True)


def _follow(filters: dict[str, Any], since: str | None, interval: float, output: Output) -> None:
    if output is Output.table:
        print(_aligned(column.upper() for column in EVENT_COLUMNS), flush=True)
    try:
        with client() as api:
            followed = api.events.follow(
                **filters,
                since=since,
                interval=interval,
                max_interval=interval * IDLE_FACTOR,
                on_ready=lambda: say("Following events (Ctrl-C to stop)…"),
            )
            for event in followed:
                _print_event(event, output)
    except KeyboardInterrupt:
        return
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, and let nothing flush into the pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


@events_app.command("list")
@handled
def events_list(
    type: Annotated[  # noqa: A002 (the API's name)
        EventType | None, typer.Option("--type", help="audit or platform")
    ] = None,
    action: Annotated[
        str | None,
        typer.Option(help="An action (cluster.create) or a prefix ending in * (cluster.*)"),
    ] = None,
    kind: Annotated[
        str | None, typer.Option(help="The resource's kind (cluster, secret, …)")
    ] = None,
    name: Annotated[str | None, typer.Option(help="The resource's name")] = None,
    actor: Annotated[str | None, typer.Option(help="A member's email or an API key's id")] = None,
    since: Annotated[
        str | None, typer.Option(help="RFC 3339 (2026-12-01T10:00:00Z): events at or after")
    ] = None,
    until: Annotated[str | None, typer.Option(help="RFC 3339: events at or before")] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=0, help=f"At most this many, newest first (default {DEFAULT_LIMIT}; 0: every one)"
        ),
    ] = None,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="Print events as they arrive, oldest first, until Ctrl-C: those after the "
            "newest one, or every one from --since",
        ),
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            min=0.01,
            help="--follow: seconds between polls while events arrive (doubling while none "
            f"do, up to {IDLE_FACTOR} times this)",
        ),
    ] = 1.0,
    output: OutputOption = None,
) -> None:
    """List the tenant's events, newest first, or follow them (--follow: one JSON object a
    line when piped)."""
    filters: dict[str, Any] = {
        "type": None if type is None else type.value,
        "action": action,
        "kind": kind,
        "name": name,
        "actor": actor,
    }
    if follow:
        if until is not None or limit is not None:
            raise typer.BadParameter("--until and --limit do not apply with --follow")
        if since is not None:
            try:
                following.instant(since)  # where the follow starts is judged here
            except ValueError as exc:
                raise typer.BadParameter(f"--since: {exc}") from None
        _follow(filters, since, interval, output or default_output())
        return
    wanted = DEFAULT_LIMIT if limit is None else limit
    with client() as api:
        events = api.events.list(**filters, since=since, until=until, limit=wanted or None)
    if (output or default_output()) is Output.table:
        render([_row(event) for event in events], Output.table, EVENT_COLUMNS)
    else:
        render(events, output)
