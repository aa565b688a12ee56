"""Following a tenant's event stream (``events.follow``): the query of each poll, where it
stops, what is new, and how long to wait before the next (pure, shared by both clients).

The list answers newest first in the order the events took their places in the stream, and
those places commit in order (a tenant's events are appended one transaction at a time):
every event after the newest one already seen is new. So a poll walks the newest pages until
it meets that event (the anchor), and what it found before it is what arrived since. The
``since`` it sends bounds the walk should the anchor be gone (purged by retention): the
anchor's time less ``OVERLAP``, far more than an event's time can trail its place (the time is
taken just before the place). Ids already yielded are remembered, so nothing is yielded twice
even then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from tenantplane_client import models as m

EventType = Literal["audit", "platform"]
OVERLAP = timedelta(minutes=5)
# The first page of each poll while following: most polls find nothing or a few events.
FIRST_PAGE = 20
# How many yielded ids are remembered for de-duplication.
REMEMBERED = 10_000


def rfc3339(value: datetime | str) -> str:
    """A time for ``since``/``until``: a string as given, a datetime with its offset (a naive
    one is refused: the server would not know its zone)."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{value!r} has no time zone: give an aware datetime (tzinfo=UTC)")
    return value.isoformat()


def instant(value: datetime | str) -> datetime:
    """``value`` as an aware datetime (an RFC 3339 string parsed)."""
    parsed = datetime.fromisoformat(value) if isinstance(value, str) else value
    rfc3339(parsed)
    return parsed


def event_query(
    *,
    type: EventType | None = None,  # noqa: A002 (the API's name)
    action: str | None = None,
    kind: str | None = None,
    name: str | None = None,
    actor: str | None = None,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
) -> dict[str, str]:
    """The list's query parameters for these filters (those given)."""
    values = {
        "type": type,
        "action": action,
        "kind": kind,
        "name": name,
        "actor": actor,
        "since": None if since is None else rfc3339(since),
        "until": None if until is None else rfc3339(until),
    }
    return {key: value for key, value in values.items() if value is not None}


def _time(event: m.EventRead) -> datetime:
    return datetime.fromisoformat(event.time)


@dataclass
class Cursor:
    """Where the follow is: the filters, the anchor (the newest event seen), the time each
    poll starts from, and the ids already yielded."""

    filters: dict[str, str]
    since: datetime | None = None
    anchor: str | None = None
    floor: datetime | None = None
    seen: dict[str, None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.floor = self.since

    def start_after(self, newest: m.EventRead | None) -> None:
        """Follow from after ``newest`` (the newest event when following starts; None: the
        stream holds none, so every event that comes is new)."""
        if newest is not None:
            self._anchor_at(newest)

    def query(self, page_size: int) -> dict[str, str]:
        """The first page's query of a poll: the filters from ``floor``, a small page while
        anchored (most polls find little), else ``page_size``."""
        query = dict(self.filters)
        if self.floor is not None:
            query["since"] = self.floor.isoformat()
        first = min(FIRST_PAGE, page_size) if self.anchor is not None else page_size
        query["limit"] = str(first)
        return query

    def reached(self, event: m.EventRead) -> bool:
        """The poll's walk has come to what was seen before."""
        return event.id == self.anchor

    def take(self, newest_first: Sequence[m.EventRead]) -> list[m.EventRead]:
        """What a poll found before the anchor, oldest first, without those already yielded;
        the newest becomes the anchor."""
        new = [event for event in reversed(newest_first) if event.id not in self.seen]
        for event in new:
            self.seen[event.id] = None
        while len(self.seen) > REMEMBERED:
            del self.seen[next(iter(self.seen))]
        if newest_first:
            self._anchor_at(newest_first[0])
        return new

    def _anchor_at(self, event: m.EventRead) -> None:
        self.anchor = event.id
        self.floor = _time(event) - OVERLAP
        if self.since is not None and self.since > self.floor:
            self.floor = self.since


@dataclass
class Backoff:
    """The wait between polls: ``interval`` after a poll that found events, doubled after
    each that found none, at most ``max_interval``."""

    interval: float = 1.0
    max_interval: float = 10.0
    current: float = field(init=False)

    def __post_init__(self) -> None:
        if not 0 < self.interval <= self.max_interval:
            raise ValueError("need 0 < interval <= max_interval")
        self.current = self.interval

    def wait(self, found: bool) -> float:
        if found:
            self.current = self.interval
        delay = self.current
        self.current = min(self.current * 2, self.max_interval)
        return delay
