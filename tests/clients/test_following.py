"""What following the event stream decides without a server (following.py): where a poll
starts, what is new and in which order, how long to wait. The SDK's and tpctl's follow
against a real server: test_sdk_events.py, test_tpctl_events.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tenantplane_client import models
from tenantplane_client.following import (
    FIRST_PAGE,
    OVERLAP,
    Backoff,
    Cursor,
    event_query,
    instant,
    rfc3339,
)

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)


def event(number: int, at: datetime = T0) -> models.EventRead:
    return models.EventRead(
        id=f"E{number:03d}",
        time=at.isoformat().replace("+00:00", "Z"),
        type="audit",
        action="secret.create",
        resource=models.EventResource(kind="secret", name=f"s{number}"),
        actor=models.EventActor(kind="system"),
        data={},
        hash="0" * 64,
    )


def test_a_poll_starts_from_the_anchor_less_the_overlap_with_a_small_first_page() -> None:
    cursor = Cursor({"kind": "secret"})
    assert cursor.query(500) == {"kind": "secret", "limit": "500"}  # nothing seen: everything
    cursor.start_after(event(1, T0))
    assert cursor.reached(event(1))
    assert not cursor.reached(event(2))
    query = cursor.query(500)
    assert query == {"kind": "secret", "since": (T0 - OVERLAP).isoformat(), "limit": "20"}
    assert cursor.query(5)["limit"] == "5"
    assert FIRST_PAGE == 20


def test_since_stays_the_floor_when_it_is_later_than_the_overlap() -> None:
    since = T0 - timedelta(minutes=1)
    cursor = Cursor({}, since=since)
    assert cursor.query(100)["since"] == since.isoformat()
    cursor.take([event(2, T0)])
    assert cursor.query(100)["since"] == since.isoformat()
    cursor.take([event(3, T0 + timedelta(hours=1))])
    assert cursor.query(100)["since"] == (T0 + timedelta(hours=1) - OVERLAP).isoformat()


def test_take_answers_oldest_first_each_event_once_and_moves_the_anchor() -> None:
    cursor = Cursor({})
    cursor.start_after(event(1))
    assert [e.id for e in cursor.take([event(4), event(3), event(2)])] == ["E002", "E003", "E004"]
    assert cursor.anchor == "E004"
    # The anchor gone (purged): the walk finds what it already gave as well; only the new.
    assert [e.id for e in cursor.take([event(5), event(4), event(3)])] == ["E005"]
    assert cursor.anchor == "E005"
    assert cursor.take([]) == []
    assert cursor.anchor == "E005"


def test_backoff_doubles_while_idle_up_to_the_cap_and_resets_on_arrivals() -> None:
    backoff = Backoff(1.0, 10.0)
    assert [backoff.wait(False) for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert backoff.wait(True) == 1.0
    assert backoff.wait(False) == 2.0
    with pytest.raises(ValueError, match="interval"):
        Backoff(0.0, 10.0)
    with pytest.raises(ValueError, match="interval"):
        Backoff(5.0, 1.0)


def test_times_need_their_zone_and_filters_not_given_are_not_sent() -> None:
    with pytest.raises(ValueError, match="no time zone"):
        rfc3339(datetime(2026, 12, 1, 10, 0))
    with pytest.raises(ValueError, match="no time zone"):
        instant("2026-12-01T10:00:00")
    assert instant("2026-12-01T10:00:00Z") == T0
    assert rfc3339(T0) == "2026-12-01T10:00:00+00:00"
    assert event_query(kind="cluster", since="2026-12-01T10:00:00Z", until=T0) == {
        "kind": "cluster",
        "since": "2026-12-01T10:00:00Z",
        "until": "2026-12-01T10:00:00+00:00",
    }
    assert event_query() == {}
