"""Lists that page, Kubernetes style: ``limit`` and ``continue`` (docs/api.md, "Paging").

Without ``limit`` a list answers every item, as it always has: a client that does not page
loses nothing. With ``limit`` it answers at most that many, in the list's usual order, and a
top-level ``continue`` token when more remain; the next page is the same request with
``continue=<token>``.

Paging is by keyset, never by offset: the token carries the sort key of the last item
answered, and the next page starts after it. An item that exists through the whole walk is
answered exactly once, whatever is created or deleted between pages (an offset would skip
one item for each deleted before it). Every list's sort key is unique, so there are no ties.

A token is sealed (keys.py, its own purpose): it names its list and the tenant, so one from
another list or tenant, or one tampered with, is refused (400, ``field: continue``) rather
than read. It does not expire: a position in a keyset stays meaningful.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Query, Request

from tenantplane.http.errors import ApiError, ValidationFailed
from tenantplane.keys import BrokenSeal, KeyRing, Purpose, seal, unseal

MAX_LIMIT = 1000
# Far above any token of ours (a list's name, a tenant id and a sort key of at most a few
# hundred characters): anything longer is refused before it is decoded.
MAX_TOKEN_LENGTH = 2048

# A sort key as a token carries it: strings and integers (a timestamp in epoch microseconds).
SortKey = tuple[str | int, ...]
T = TypeVar("T")


@dataclass(frozen=True)
class Page:
    """What a request asks of a list: at most ``limit`` items, after ``after``."""

    limit: int | None
    after: SortKey | None


# The whole list: what a list answers without ``limit``.
WHOLE = Page(None, None)


@dataclass(frozen=True)
class PageQuery:
    """The paging parameters as sent, for one list (``listing``) of one tenant (``scope``;
    "" for the catalogues, the same for everyone)."""

    limit: int | None
    token: str | None
    keys: KeyRing

    def page(self, listing: str, scope: str | int = "") -> Page:
        if self.token is None:
            return Page(self.limit, None)
        return Page(self.limit, _read_token(self.keys, listing, str(scope), self.token))

    def next_token(self, listing: str, scope: str | int, last: SortKey | None) -> str | None:
        """The token of the page after the one whose last item has sort key ``last`` (None
        when that page was the last)."""
        if last is None:
            return None
        payload = {"l": listing, "s": str(scope), "k": list(last)}
        return seal(self.keys, Purpose.list_continue, payload)


async def page_query(
    request: Request,
    limit: Annotated[
        int | None,
        Query(ge=1, le=MAX_LIMIT, description="At most this many items; paging starts."),
    ] = None,
    token: Annotated[
        str | None,
        Query(
            alias="continue",
            max_length=MAX_TOKEN_LENGTH,
            description="The token a previous page answered as `continue`: the next page.",
        ),
    ] = None,
) -> PageQuery:
    """The dependency of every list that pages (async: a plain function would be run in a
    worker thread, a handoff that cost a list more than its own query)."""
    return PageQuery(limit, token, request.app.state.keys)


Paging = Annotated[PageQuery, Depends(page_query)]


def _read_token(keys: KeyRing, listing: str, scope: str, token: str) -> SortKey:
    try:
        payload = unseal(keys, Purpose.list_continue, token)
    except BrokenSeal:
        raise _refused("continue token is not valid") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("k"), list):
        raise _refused("continue token is not valid")
    # Told apart only after the signature: a token of ours for another list or tenant.
    if payload.get("l") != listing or payload.get("s") != scope:
        raise _refused("continue token is for another list")
    key = payload["k"]
    if not all(isinstance(part, str | int) for part in key):
        raise _refused("continue token is not valid")
    return tuple(key)


def _refused(error: str) -> ValidationFailed:
    return ValidationFailed(error, field="continue")


def paged(
    items: Sequence[T], sort_key: Callable[[T], SortKey], page: Page
) -> tuple[list[T], SortKey | None]:
    """One page of ``items`` (sorted by ``sort_key``, which is unique), and the sort key of
    its last item when more remain. For lists read whole (documents, catalogues)."""
    after = page.after
    start = [item for item in items if after is None or sort_key(item) > after]
    if page.limit is None or len(start) <= page.limit:
        return start, None
    answered = start[: page.limit]
    return answered, sort_key(answered[-1])


def paged_in_stored_order(
    items: Sequence[T], identity: Callable[[int, T], str], page: Page
) -> tuple[list[T], SortKey | None]:
    """One page of a list kept in the order it was written, not sorted (alerting's
    receivers, routes): it starts after the item the token names by ``identity`` (its
    position and itself → a string). Created items are appended, so the walk sees them; if
    the item the token names is gone, the walk cannot go on without skipping or repeating:
    410 ``CONTINUE_EXPIRED``, list again from the start."""
    start = 0
    if page.after is not None:
        named = page.after[0]
        found = next((at for at, item in enumerate(items) if identity(at, item) == named), None)
        if found is None:
            raise ApiError(
                410,
                "the list changed since the previous page (its last item is gone): list it "
                "again without continue",
                code="CONTINUE_EXPIRED",
                field="continue",
            )
        start = found + 1
    rest = list(items[start:])
    if page.limit is None or len(rest) <= page.limit:
        return rest, None
    last = start + page.limit - 1
    return rest[: page.limit], (identity(last, items[last]),)


def split_page(
    rows: Sequence[T], limit: int | None, sort_key: Callable[[T], SortKey]
) -> tuple[Sequence[T], SortKey | None]:
    """For lists paged in SQL: ``rows`` read with ``limit + 1``; the page and, when the
    extra row came, the last answered item's sort key."""
    if limit is None or len(rows) <= limit:
        return rows, None
    answered = rows[:limit]
    return answered, sort_key(answered[-1])


def with_continue(document: dict[str, Any], token: str | None) -> dict[str, Any]:
    """A list's answer with its ``continue`` field when more remain (absent otherwise)."""
    if token is not None:
        document["continue"] = token
    return document
