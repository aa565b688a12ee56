"""``GET /tenants/{tenant}/events``: the tenant's event stream, newest first, always paged."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import Query, Request, Response

from tenantplane.access import TenantMemberReads
from tenantplane.db.base import parse_rfc3339
from tenantplane.db.session import ReadsDep
from tenantplane.event import repository
from tenantplane.event.repository import EventFilter
from tenantplane.event.schemas import EventPage
from tenantplane.http.errors import ValidationFailed
from tenantplane.http.paging import MAX_LIMIT, MAX_TOKEN_LENGTH, PageQuery
from tenantplane.http.routers import PrefixedRouter

router = PrefixedRouter(prefix="/tenants/{tenant}/events", tags=["events"])

LISTING = "events"
DEFAULT_LIMIT = 100
# An action, or a prefix of one ending in `*` (`cluster.*`; `*` alone: every action).
ACTION_PATTERN = r"^(\*|[a-z][a-z0-9_.]*\*?)$"


def _instant(value: str | None, field: str) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        raise ValidationFailed(
            f"{field} must be an RFC 3339 timestamp with an offset, e.g. 2026-12-01T10:00:00Z",
            field=field,
        ) from None


@router.get("", response_model=EventPage, response_model_exclude_none=True)
async def list_events(
    principal: TenantMemberReads,
    reads: ReadsDep,
    request: Request,
    type: Annotated[  # noqa: A002
        Literal["audit", "platform"] | None, Query(description="The event's type.")
    ] = None,
    action: Annotated[
        str | None,
        Query(
            max_length=81,
            pattern=ACTION_PATTERN,
            description="An action (`cluster.create`), or a prefix ending in `*` (`cluster.*`).",
        ),
    ] = None,
    kind: Annotated[
        str | None,
        Query(min_length=1, max_length=40, description="The resource's kind (`cluster`)."),
    ] = None,
    name: Annotated[
        str | None, Query(min_length=1, max_length=320, description="The resource's name.")
    ] = None,
    actor: Annotated[
        str | None, Query(min_length=1, max_length=320, description="An email or a key id.")
    ] = None,
    since: Annotated[str | None, Query(description="RFC 3339; events at or after.")] = None,
    until: Annotated[str | None, Query(description="RFC 3339; events at or before.")] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_LIMIT, description="At most this many events (1-1000).")
    ] = DEFAULT_LIMIT,
    token: Annotated[
        str | None,
        Query(
            alias="continue",
            max_length=MAX_TOKEN_LENGTH,
            description="The token a previous page answered as `continue`: the next page.",
        ),
    ] = None,
) -> Response:
    """List the tenant's events.

    Audit and platform events, newest first; `limit` (1-1000, default 100) and `continue`
    page it. `action` is exact, or a prefix ending in `*` (`cluster.*`). Members and the
    tenant's API keys, readonly included.
    """
    paging = PageQuery(limit, token, request.app.state.keys)
    after = paging.page(LISTING, principal.tenant_id).after
    prefix = action[:-1] if action is not None and action.endswith("*") else None
    wanted = EventFilter(
        type=type,
        action=action if prefix is None else None,
        action_prefix=prefix or None,
        kind=kind,
        name=name,
        actor=actor,
        since=_instant(since, "since"),
        until=_instant(until, "until"),
        before_seq=int(after[0]) if after else None,
    )
    rows = await repository.page(reads, principal.tenant_id, wanted, limit + 1)
    items = [f'{row.body[:-1]},"hash":"{row.hash}"}}' for row in rows[:limit]]
    document = '{"items":[' + ",".join(items) + "]"
    if len(rows) > limit:
        next_token = paging.next_token(LISTING, principal.tenant_id, (int(rows[limit - 1].seq),))
        document += f',"continue":"{next_token}"'
    return Response(document + "}", media_type="application/json")
