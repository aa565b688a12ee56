"""The configuration document: its default, normalisation and the pieces the API edits."""

from __future__ import annotations

import copy
from typing import Any

# The document is what the backends apply: its type is theirs, re-exported for the feature.
from tenantplane.providers.alerting.base import Document as Document

SECTIONS = ("global", "receivers", "route", "templates", "time_intervals")
DEFAULT_RECEIVER = "default"


def default_document() -> Document:
    """What a tenant starts with: one receiver without integrations, routed everything."""
    return {
        "global": {},
        "receivers": [{"name": DEFAULT_RECEIVER}],
        "route": {"receiver": DEFAULT_RECEIVER},
        "templates": {},
        "time_intervals": [],
    }


def without_nulls(value: Any) -> Any:
    """JSON null means "not set", as in Alertmanager's YAML: drop such keys everywhere."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def clone(document: Document) -> Document:
    return copy.deepcopy(document)


def named_index(document: Document, section: str, name: str) -> int | None:
    """Index of the entry called ``name`` in a named list (receivers, time_intervals)."""
    for index, entry in enumerate(document[section]):
        if entry.get("name") == name:
            return index
    return None


def _routes(route: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [route]
    for child in route.get("routes", []):
        nodes.extend(_routes(child))
    return nodes


def routes_using_receiver(document: Document, name: str) -> bool:
    return any(node.get("receiver") == name for node in _routes(document["route"]))


def routes_using_time_interval(document: Document, name: str) -> bool:
    return any(
        name in node.get("mute_time_intervals", []) or name in node.get("active_time_intervals", [])
        for node in _routes(document["route"])
    )
