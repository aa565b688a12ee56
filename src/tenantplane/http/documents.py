"""Responses built as JSON documents by the route itself, and documents kept encoded.

A list that pollers read again and again (a tenant's clusters, its invoice history) is made
of resources that mostly have not changed since the last poll, yet every poll would build
and encode all of them: 120 invoices with 360 line items were ~25 ms of CPU per request.
A listing reads each resource's (id, resourceVersion, name, createdAt) and reuses the
document encoded for exactly that; only new or changed resources are read in full. The
versions are keys, never shown: their creation time is read as stored, not converted. Every
change to these resources bumps their resourceVersion (ORM versioning and the Core updates
alike), so a kept document is never stale; name and creation time are part of the key, so a
row id reused after a deletion can never bring back another resource's document.

A page of a list is kept too, whole, under the digest of the list's versions
(db/reads.digest_of): the server builds that one string from the same rows, so a poll of an
unchanged list reads one short row and answers the page as it was, without reading, paging
and looking up each resource again (the larger part of a poll of a long list). A page is kept
only when each of its documents is of exactly the version its listing read, and the listing
read the digest and the versions in one snapshot: an equal digest is then the same rows, and
the same rows are the same page.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy.sql import Executable
from starlette.responses import JSONResponse

from tenantplane.db.reads import Parameters, ReadRow, Reads
from tenantplane.http.paging import WHOLE, Page, SortKey, paged

# Reads the rows of these ids in full: each row (with .id and .resource_version) and its
# document.
Reader = Callable[[list[int]], Awaitable[Iterable[tuple[Any, dict[str, Any]]]]]

# About 1-2 KB each: at most a few tens of MB per process.
DEFAULT_MAX_DOCUMENTS = 50_000
# A kept page holds its documents (shared with the map above while they are in it) and the
# digest's hash: the pages of a few thousand lists, their documents bounded as the map's.
DEFAULT_MAX_PAGES = 4_096


@dataclass(frozen=True)
class Listing:
    """One list as its repository reads it: ``versions`` (id, resource_version, name,
    created_at as stored, in the list's order) and its ``digest`` (db/reads.digest_of), both
    with ``parameters``; ``read`` brings the documents of some ids. ``sort_key`` pages the
    list (None: it is answered whole)."""

    kind: str
    versions: Executable
    digest: Executable
    parameters: Parameters
    read: Reader
    sort_key: Callable[[ReadRow], SortKey] | None = None


@dataclass(frozen=True)
class _KeptPage:
    digest: bytes
    items: list[orjson.Fragment]
    last: SortKey | None


def _digest(row: ReadRow | None) -> bytes:
    """A fixed-size stand-in for a list's digest (a long list's is long)."""
    text = "" if row is None or row[0] is None else row[0]
    return hashlib.blake2b(text.encode(), digest_size=32).digest()


class DocumentResponse(JSONResponse):
    """A JSON document encoded by orjson (kept documents are embedded as they are): the same
    compact UTF-8 as the framework's encoder, several times faster for long lists."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


class EncodedDocuments:
    """A bounded, per-process map from a resource's identity and version to its encoded
    document; the least recently used go first."""

    def __init__(
        self, max_documents: int = DEFAULT_MAX_DOCUMENTS, max_pages: int = DEFAULT_MAX_PAGES
    ) -> None:
        self.max_documents = max_documents
        self.max_pages = max_pages
        self._documents: OrderedDict[Hashable, orjson.Fragment] = OrderedDict()
        self._pages: OrderedDict[Hashable, _KeptPage] = OrderedDict()
        self._page_items = 0
        # Documents being read by a listing now, for the listings that want them meanwhile.
        self._filling: dict[Hashable, asyncio.Future[orjson.Fragment | None]] = {}

    def get(self, key: Hashable) -> orjson.Fragment | None:
        document = self._documents.get(key)
        if document is not None:
            self._documents.move_to_end(key)
        return document

    def put(self, key: Hashable, document: dict[str, Any]) -> orjson.Fragment:
        encoded = orjson.Fragment(orjson.dumps(document))
        self._documents[key] = encoded
        self._documents.move_to_end(key)
        while len(self._documents) > self.max_documents:
            self._documents.popitem(last=False)
        return encoded

    def __len__(self) -> int:
        return len(self._documents)

    @property
    def pages_kept(self) -> int:
        return len(self._pages)

    async def page(
        self, reads: Reads, listing: Listing, page: Page = WHOLE
    ) -> tuple[list[orjson.Fragment], SortKey | None]:
        """A ``page`` of ``listing``'s documents, and the sort key of its last when more
        remain: the page kept for the list's current digest, or read (and kept)."""
        key = (listing.kind, *sorted(listing.parameters.items()), page)
        kept = self._pages.get(key)
        if kept is not None and _digest(await reads.first(listing.digest, listing.parameters)) == (
            kept.digest
        ):
            self._pages.move_to_end(key)
            return kept.items, kept.last
        digest, versions = await reads.snapshot(
            (listing.digest, listing.parameters), (listing.versions, listing.parameters)
        )
        listed, last = (
            (list(versions), None)
            if listing.sort_key is None
            else paged(versions, listing.sort_key, page)
        )
        items, complete = await self.listing(listing.kind, listed, listing.read)
        if complete:
            self._keep_page(key, _KeptPage(_digest(digest[0] if digest else None), items, last))
        return items, last

    def _keep_page(self, key: Hashable, page: _KeptPage) -> None:
        """Keep ``page``; the least recently used go first, so that at most ``max_pages``
        pages and ``max_documents`` documents in them are kept (a page's documents may
        outlive their place in the map of documents)."""
        replaced = self._pages.pop(key, None)
        self._page_items -= 0 if replaced is None else len(replaced.items)
        self._pages[key] = page
        self._page_items += len(page.items)
        while len(self._pages) > self.max_pages or self._page_items > self.max_documents:
            _, evicted = self._pages.popitem(last=False)
            self._page_items -= len(evicted.items)

    async def listing(
        self,
        kind: str,
        listed: Sequence[Any],
        read: Reader,
    ) -> tuple[list[orjson.Fragment], bool]:
        """The documents of the ``listed`` rows (id, resource_version, name, created_at), in
        their order: the kept ones as they are, the others from ``read(ids)`` (each row
        with its document), kept from then on; and whether each is of exactly its listed
        version (none deleted or changed since the listing).

        A document another listing is reading now is waited for, not read again: a burst
        of polls of a list nobody has read yet (after a start) would otherwise each read
        and encode all of it, 64 concurrent polls of 120 invoices taking ~1 s of CPU before
        the first answer (bench/history.md, round 9)."""
        keys = {row[0]: (kind, *row) for row in listed}
        kept = {row_id: self.get(key) for row_id, key in keys.items()}
        missing = [row_id for row_id, document in kept.items() if document is None]
        if missing:
            others = {i: self._filling[keys[i]] for i in missing if keys[i] in self._filling}
            mine = [row_id for row_id in missing if row_id not in others]
            if mine:
                kept.update(await self._fill(keys, mine, read))
            for row_id, filled in others.items():
                kept[row_id] = await asyncio.shield(filled)
            # What the other listing did not bring (it failed, was cancelled, or found the
            # row gone): read here.
            again = [row_id for row_id in others if kept[row_id] is None]
            if again:
                kept.update(await self._read(keys, again, read))
        # Deleted since it was listed: left out.
        documents = [document for document in kept.values() if document is not None]
        # Of its listed version exactly when it is the document kept under that version's
        # key (one changed since was answered without being kept).
        complete = all(
            document is not None and document is self._documents.get(keys[row_id])
            for row_id, document in kept.items()
        )
        return documents, complete

    async def _fill(
        self, keys: dict[int, tuple[Any, ...]], ids: list[int], read: Reader
    ) -> dict[int, orjson.Fragment | None]:
        """``_read``, announced to concurrent listings while it runs; they get each
        document, or None when this read did not bring it."""
        loop = asyncio.get_running_loop()
        filling = {row_id: loop.create_future() for row_id in ids}
        for row_id, future in filling.items():
            self._filling[keys[row_id]] = future
        found: dict[int, orjson.Fragment | None] = {}
        try:
            found = await self._read(keys, ids, read)
        finally:
            for row_id, future in filling.items():
                del self._filling[keys[row_id]]
                future.set_result(found.get(row_id))
        return found

    async def _read(
        self, keys: dict[int, tuple[Any, ...]], ids: list[int], read: Reader
    ) -> dict[int, orjson.Fragment | None]:
        found: dict[int, orjson.Fragment | None] = {}
        for row, document in await read(ids):
            key = keys[row.id]
            if row.resource_version == key[2]:
                found[row.id] = self.put(key, document)
            else:
                # Changed since it was listed: the newer document is answered, and kept
                # once a listing sees its version.
                found[row.id] = orjson.Fragment(orjson.dumps(document))
        return found
