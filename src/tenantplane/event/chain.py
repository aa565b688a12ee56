"""The hash chain: what an event's ``hash`` covers, and how a stream is checked.

``hash`` = SHA-256 over the previous event's hash (its 32 raw bytes; 32 zero bytes before a
tenant's first event, or the hash of the last purged one) followed by the event's canonical
JSON in UTF-8: the event without ``hash``, keys sorted, no insignificant whitespace
(RFC 8785's form for the values events hold: strings, integers, booleans, null). Changing,
removing or reordering a stored event breaks the chain at that event.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


def canonical_json(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def chained_hash(previous: str, body: str) -> str:
    return hashlib.sha256(bytes.fromhex(previous) + body.encode()).hexdigest()


@dataclass(frozen=True)
class StoredLink:
    """One stored event as ``verify`` sees it: its position, body, hash and the columns the
    filters read (which must say what the body says)."""

    seq: int
    id: str
    body: str
    hash: str
    columns: dict[str, str]


@dataclass(frozen=True)
class Break:
    seq: int
    event_id: str
    reason: str


def columns_of(event: dict[str, Any]) -> dict[str, str]:
    """The filter columns an event is stored with."""
    resource = event.get("resource") or {}
    actor = event.get("actor") or {}
    return {
        "id": str(event.get("id", "")),
        "type": str(event.get("type", "")),
        "action": str(event.get("action", "")),
        "resource_kind": str(resource.get("kind", "")),
        "resource_name": str(resource.get("name", "")),
        "actor_kind": str(actor.get("kind", "")),
        "actor_id": str(actor.get("email") or actor.get("id") or ""),
    }


class ChainWalk:
    """Checks stored events one at a time, in chain order, from where the kept chain begins
    (position ``seq``, hash ``hash``: the purge anchor, or 0 and the genesis hash)."""

    def __init__(self, seq: int, digest: str) -> None:
        self.seq, self.hash = seq, digest
        self.count = 0
        self.first_seq: int | None = None

    def check(self, link: StoredLink) -> Break | None:
        """The break ``link`` makes, or None when it follows from the one before it."""
        if link.seq != self.seq + 1:
            return Break(self.seq + 1, "", f"position {self.seq + 1} is missing")
        try:
            event = json.loads(link.body)
        except ValueError:
            return Break(link.seq, link.id, "the stored body is not JSON")
        if not isinstance(event, dict) or canonical_json(event) != link.body:
            return Break(link.seq, link.id, "the stored body is not in canonical form")
        if chained_hash(self.hash, link.body) != link.hash:
            return Break(link.seq, link.id, "the hash does not follow from the previous event")
        if columns_of(event) != link.columns:
            return Break(link.seq, link.id, "the stored columns differ from the hashed body")
        self.seq, self.hash = link.seq, link.hash
        self.count += 1
        self.first_seq = link.seq if self.first_seq is None else self.first_seq
        return None
