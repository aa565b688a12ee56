"""Where metered observability usage comes from (the usage-source interface).

A source answers, for one tenant and one billing period, the quantity of each meter and
whether its data covers the whole period. Incomplete data does not stop billing: the invoice
is issued with what is known and carries the condition ObservabilityDegraded=True.

Sources: ``none`` (default: no metered usage, nothing degraded) and ``file`` (a JSON document
of usage records exported by the operator's observability stack, see docs/billing.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from tenantplane.config import Settings

REASON_INCOMPLETE = "UsageDataIncomplete"
REASON_UNAVAILABLE = "UsageSourceUnavailable"


@dataclass(frozen=True)
class UsageReport:
    quantities: dict[str, Decimal] = field(default_factory=dict)
    complete: bool = True
    reason: str = ""
    message: str = ""
    configured: bool = True


class UsageSource(Protocol):
    async def usage(
        self, tenant: str, meters: tuple[str, ...], start: datetime, end: datetime
    ) -> UsageReport: ...


class NoUsageSource:
    async def usage(
        self, tenant: str, meters: tuple[str, ...], start: datetime, end: datetime
    ) -> UsageReport:
        return UsageReport(configured=False)


@dataclass(frozen=True)
class _Record:
    meter: str
    start: datetime
    end: datetime
    quantity: Decimal


def _parse_time(value: Any) -> datetime:
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"timestamp without a time zone: {value}")
    return parsed


def _records(document: Any, tenant: str) -> list[_Record]:
    entries = (document.get("tenants") or {}).get(tenant, [])
    records = []
    for entry in entries:
        records.append(
            _Record(
                meter=str(entry["meter"]),
                start=_parse_time(entry["start"]),
                end=_parse_time(entry["end"]),
                quantity=Decimal(str(entry["quantity"])),
            )
        )
    return records


def _first_gap(
    records: list[_Record], start: datetime, end: datetime
) -> tuple[datetime, datetime] | None:
    """The first stretch of [start, end) that no record covers, if any."""
    cursor = start
    for record in sorted(records, key=lambda record: record.start):
        if record.start > cursor:
            return cursor, min(record.start, end)
        cursor = max(cursor, record.end)
        if cursor >= end:
            return None
    return (cursor, end) if cursor < end else None


@lru_cache(maxsize=4)
def _read_document(path: Path, mtime_ns: int, size: int) -> Any:
    """The usage file, parsed once per version of it (a billing run asks for every tenant)."""
    return json.loads(path.read_text(encoding="utf-8"))


class FileUsageSource:
    """Usage records from a JSON file:
    ``{"tenants": {"<tenant>": [{"meter", "start", "end", "quantity"}, …]}}``.

    A record counts in the period holding its start. The period is complete for a meter when
    the records' intervals cover it without gaps.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path

    async def usage(
        self, tenant: str, meters: tuple[str, ...], start: datetime, end: datetime
    ) -> UsageReport:
        if self.path is None:
            return UsageReport(
                complete=False, reason=REASON_UNAVAILABLE, message="no usage file configured"
            )
        try:
            version = self.path.stat()
            document = _read_document(self.path, version.st_mtime_ns, version.st_size)
            records = _records(document, tenant)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, InvalidOperation) as exc:
            return UsageReport(
                complete=False,
                reason=REASON_UNAVAILABLE,
                message=f"usage data could not be read: {type(exc).__name__}",
            )
        quantities: dict[str, Decimal] = {}
        gaps = []
        for meter in meters:
            mine = [record for record in records if record.meter == meter]
            inside = [record for record in mine if start <= record.start < end]
            quantities[meter] = sum((record.quantity for record in inside), Decimal(0))
            gap = _first_gap(mine, start, end)
            if gap is not None:
                gaps.append(f"{meter}: no data from {_rfc3339(gap[0])} to {_rfc3339(gap[1])}")
        if gaps:
            return UsageReport(
                quantities,
                complete=False,
                reason=REASON_INCOMPLETE,
                message="metered charges may be understated; " + "; ".join(gaps),
            )
        return UsageReport(quantities)


def _rfc3339(value: datetime) -> str:
    from tenantplane.db.base import rfc3339

    return rfc3339(value)


def build_usage_source(settings: Settings) -> UsageSource:
    if settings.usage_source == "file":
        return FileUsageSource(settings.usage_file)
    return NoUsageSource()
