"""Kubeconfig entries for a cluster, merged into a file without touching anything else.

The user entry authenticates through an exec credential plugin (``tpctl token``): kubectl
asks tpctl for a short-lived token of the cluster, bound to the caller (the API key or OIDC
token itself never goes to the cluster), so no secret is copied into the file.
"""

from __future__ import annotations

import enum
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from tenantplane_client.cli.profiles import ENV_PROFILE, write_private

EXEC_API_VERSION = "client.authentication.k8s.io/v1"


class KubeconfigConflict(Exception):
    """An entry of the same name already exists with other contents."""


def default_path() -> Path:
    first = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return Path(first) if first else Path.home() / ".kube" / "config"


def entries(
    *,
    context: str,
    endpoint: str,
    certificate_authority: str,
    profile: str,
    command: str,
    tenant: str,
    cluster: str,
) -> dict[str, Any]:
    """The cluster, user and context entries for one cluster (all named ``context``)."""
    return {
        "cluster": {
            "name": context,
            "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority},
        },
        "user": {
            "name": context,
            "user": {
                "exec": {
                    "apiVersion": EXEC_API_VERSION,
                    "command": command,
                    "args": ["token", "--tenant", tenant, "--cluster", cluster],
                    "env": [{"name": ENV_PROFILE, "value": profile}],
                    "interactiveMode": "Never",
                    "provideClusterInfo": False,
                }
            },
        },
        "context": {"name": context, "context": {"cluster": context, "user": context}},
    }


class Merged(enum.Enum):
    """What ``merge`` did, for tpctl to say."""

    written = "written"  # an entry was added (or the file created)
    made_current = "made_current"  # all there already; only the current context changed
    unchanged = "unchanged"  # all there already: the file was not written


def _merge_entry(document: dict[str, Any], section: str, entry: dict[str, Any]) -> bool:
    """Add ``entry`` to ``section``; False when an equal entry is there already."""
    items: list[dict[str, Any]] = document.setdefault(section, None) or []
    document[section] = items
    for existing in items:
        if existing.get("name") == entry["name"]:
            if existing != entry:
                raise KubeconfigConflict(
                    f"{section[:-1]} {entry['name']!r} already exists with other settings; "
                    "choose another name with --context or remove it first"
                )
            return False
    items.append(entry)
    return True


def merge(path: Path, new: dict[str, Any], *, set_current: bool) -> Merged:
    """Add the entries to the kubeconfig at ``path`` (created if absent), mode 0600; when
    nothing would change, the file is left as it is (not even rewritten)."""
    document: dict[str, Any] = {}
    if path.exists():
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise KubeconfigConflict(f"{path} is not a kubeconfig")
        document = loaded
    added = not document
    document.setdefault("apiVersion", "v1")
    document.setdefault("kind", "Config")
    document.setdefault("preferences", {})
    for section, entry in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
        added |= _merge_entry(document, section, new[entry])
    name = new["context"]["name"]
    switched = False
    if (set_current or not document.get("current-context")) and (
        document.get("current-context") != name
    ):
        document["current-context"] = name
        switched = True
    if not added and not switched:
        return Merged.unchanged
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_private(path, yaml.safe_dump(document, sort_keys=False))
    return Merged.written if added else Merged.made_current


def exec_credential(token: str, expires_at: datetime) -> dict[str, Any]:
    """What kubectl reads from the plugin; it runs the plugin again after the expiry."""
    stamp = expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": EXEC_API_VERSION,
        "kind": "ExecCredential",
        "status": {"token": token, "expirationTimestamp": stamp},
    }
