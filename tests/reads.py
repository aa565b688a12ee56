"""Plain reads (db/reads.py) checked against SQLAlchemy's own execution of a statement."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from tenantplane.db.engine import Database
from tenantplane.db.reads import EngineReads, ReadRow, Reads
from tenantplane.http.documents import Listing

Read = Callable[[Reads], Awaitable[Sequence[ReadRow]]]


async def agree(database: Database, read: Read) -> Sequence[ReadRow]:
    """The rows of ``read`` through the plain reads, asserted equal, value for value and type
    for type, to those SQLAlchemy's own execution of the same statement answers."""
    plain = await read(database.reads)
    expected = await read(EngineReads(database.engine))
    assert _typed(plain) == _typed(expected)
    return expected


def _typed(rows: Sequence[ReadRow]) -> list[list[tuple[object, type]]]:
    return [[(value, type(value)) for value in row] for row in rows]


def listed(read_one: Callable[[Reads], Awaitable[ReadRow | None]]) -> Read:
    """A read of at most one row, as a read of a list."""

    async def read(reads: Reads) -> Sequence[ReadRow]:
        row = await read_one(reads)
        return [] if row is None else [row]

    return read


def snapshot_of(listing: Listing) -> Read:
    """A list's digest and versions (http/documents.py) as one read: the digest's row, then
    the versions' rows. The digest must agree too: it is compared with itself across
    processes and reads."""

    async def read(reads: Reads) -> Sequence[ReadRow]:
        digest, versions = await reads.snapshot(
            (listing.digest, listing.parameters), (listing.versions, listing.parameters)
        )
        return [*digest, *versions]

    return read


async def no_documents(ids: list[int]) -> Iterable[tuple[Any, dict[str, Any]]]:
    """A list's reader for tests that read only its digest and versions."""
    raise AssertionError(f"documents {ids} are not read here")
