"""Events: the tenant's audit and platform events, filtered by a GET form (the filters live in
the query string, so a filtered view is a link to share) and paged with the API's
``continue`` token."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from fastapi.responses import HTMLResponse

from tenantplane.console.api import ApiAnswer
from tenantplane.console.web import PageDep, field_errors
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/console/t/{tenant}/events", include_in_schema=False)

# The API's filters (docs/events.md), in the form's order.
FILTERS = ("type", "action", "kind", "name", "actor", "since", "until", "limit")
ACTORS = {"operator": "operator (CLI)", "system": "platform"}


@dataclass(frozen=True)
class EventRow:
    id: str
    time: str
    # 2026-12-02T03:04:05.123456Z is shown as 2026-12-02 and 03:04:05 UTC.
    shown_date: str
    shown_clock: str
    type: str
    action: str
    kind: str
    name: str
    actor: str
    status: str
    details: str


def _actor(actor: Mapping[str, Any]) -> str:
    kind = str(actor.get("kind", ""))
    if kind == "member":
        return str(actor.get("email") or "member")
    if kind == "apikey":
        return f"API key {actor.get('id') or ''}".strip()
    return ACTORS.get(kind, kind)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))


def _details(data: Mapping[str, Any]) -> str:
    """A platform event's ``data`` on one line: ``from → to`` first, then the rest."""
    rest = dict(data)
    parts = []
    if "from" in rest and "to" in rest:
        parts.append(f"{_value(rest.pop('from'))} → {_value(rest.pop('to'))}")
    parts.extend(f"{key}: {_value(value)}" for key, value in rest.items())
    return "; ".join(parts)


def event_row(event: Mapping[str, Any]) -> EventRow:
    time = str(event.get("time", ""))
    resource = event.get("resource") or {}
    status = event.get("status")
    return EventRow(
        id=str(event.get("id", "")),
        time=time,
        shown_date=time[:10],
        shown_clock=f"{time[11:19]} UTC" if len(time) >= 19 else "",
        type=str(event.get("type", "")),
        action=str(event.get("action", "")),
        kind=str(resource.get("kind", "")),
        name=str(resource.get("name", "")),
        actor=_actor(event.get("actor") or {}),
        status=str(status) if status is not None else "",
        details=_details(event.get("data") or {}),
    )


def filter_errors(answer: ApiAnswer) -> dict[str, str]:
    """The API's refusal of a filter, by the field it names (without the "invalid query
    parameter NAME:" the API starts such a message with: the form shows it at NAME)."""
    errors = dict(field_errors(answer))
    for name, message in errors.items():
        if name:
            errors[name] = message.removeprefix(f"invalid query parameter {name}: ")
    return errors


def _href(tenant: str, params: Mapping[str, str]) -> str:
    base = f"/console/t/{quote(tenant)}/events"
    return f"{base}?{urlencode(params)}" if params else base


@router.get("")
async def list_events(page: PageDep) -> HTMLResponse:
    query = page.request.query_params
    values = {name: query.get(name, "").strip() for name in FILTERS}
    params = {name: value for name, value in values.items() if value}
    token = query.get("continue", "")
    answer = await page.api.get(
        f"/tenants/{quote(page.tenant)}/events",
        {**params, "continue": token} if token else params,
    )
    rows = [event_row(event) for event in answer.body.get("items", [])] if answer.ok else []
    next_token = answer.body.get("continue") if answer.ok else None
    return page.render(
        "events/list.html",
        status=200 if answer.ok else answer.status,
        answer=answer,
        values=values,
        errors=filter_errors(answer),
        rows=rows,
        filtered=bool(params),
        paged=bool(token),
        first_href=_href(page.tenant, params),
        next_href=_href(page.tenant, {**params, "continue": str(next_token)})
        if next_token
        else None,
    )
