"""Access to tenants' vaults: does a secret path exist? Values are never read.

Layout (docs/secrets.md): every tenant has its own KV version 2 mount, named by
``TENANTPLANE_VAULT_MOUNT_TEMPLATE`` (default ``tenant-{tenant}``); a managed secret's
``secretPath`` is relative to that mount. Existence is checked by reading the path's KV v2
*metadata* (``GET /v1/<mount>/metadata/<path>``), which carries versions and timestamps but no
data. Without ``TENANTPLANE_VAULT_ADDR`` paths are not checked at all (``not_checked``).
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import hvac
import hvac.exceptions
import requests

from tenantplane.config import Settings
from tenantplane.providers.http_pool import close_adapters


class PathStatus(enum.StrEnum):
    found = "found"
    not_found = "not_found"
    # Metadata exists but the current version is deleted or destroyed: nothing to sync.
    version_deleted = "version_deleted"
    denied = "denied"
    unavailable = "unavailable"
    not_checked = "not_checked"


@dataclass(frozen=True)
class PathCheck:
    status: PathStatus
    message: str


class VaultPaths(Protocol):
    def mount_for(self, tenant: str) -> str:
        """The KV v2 mount holding ``tenant``'s secrets."""

    async def check(self, tenant: str, path: str, now: datetime) -> PathCheck:
        """Whether ``path`` exists in ``tenant``'s mount (never raises for vault failures);
        ``now`` (the database's time) judges whether a scheduled deletion has passed."""

    async def aclose(self) -> None:
        """Close the connections to the vault (when the reconcilers stop)."""


class UncheckedVaultPaths:
    """No vault configured: paths are validated syntactically only (by the API)."""

    def __init__(self, mount_template: str) -> None:
        self.mount_template = mount_template

    def mount_for(self, tenant: str) -> str:
        return self.mount_template.format(tenant=tenant)

    async def check(self, tenant: str, path: str, now: datetime) -> PathCheck:
        return PathCheck(PathStatus.not_checked, "no vault is configured; path not checked")

    async def aclose(self) -> None:
        return None


class HvacVaultPaths:
    """Checks paths with ``hvac`` (synchronous, so each call runs in a worker thread).

    Every check goes through one ``requests`` session, whose connection pool (thread-safe)
    keeps connections to the vault open between checks instead of one per check.
    """

    def __init__(
        self, addr: str, token: str, mount_template: str, *, timeout_seconds: float = 5.0
    ) -> None:
        self.addr = addr
        self._token = token
        self.mount_template = mount_template
        self.timeout_seconds = timeout_seconds
        self._session = requests.Session()

    async def aclose(self) -> None:
        close_adapters(self._session.adapters.values())

    def mount_for(self, tenant: str) -> str:
        return self.mount_template.format(tenant=tenant)

    async def check(self, tenant: str, path: str, now: datetime) -> PathCheck:
        mount = self.mount_for(tenant)
        return await asyncio.to_thread(self._check, mount, path, now)

    def _check(self, mount: str, path: str, now: datetime) -> PathCheck:
        client = hvac.Client(
            url=self.addr, token=self._token, timeout=self.timeout_seconds, session=self._session
        )
        where = f"{mount}/{path}"
        try:
            response = client.secrets.kv.v2.read_secret_metadata(path=path, mount_point=mount)
        except hvac.exceptions.InvalidPath:
            return PathCheck(PathStatus.not_found, f"no secret at {where} in the vault")
        except (hvac.exceptions.Forbidden, hvac.exceptions.Unauthorized):
            return PathCheck(PathStatus.denied, f"the vault denied access to {where}")
        except (hvac.exceptions.VaultError, requests.exceptions.RequestException) as exc:
            # Only the exception's class: its text may quote the vault's response.
            return PathCheck(
                PathStatus.unavailable, f"the vault is unavailable ({type(exc).__name__})"
            )
        return _metadata_check(response, where, now)


def _metadata_check(response: Any, where: str, now: datetime) -> PathCheck:
    data = response.get("data") if isinstance(response, dict) else None
    if not isinstance(data, dict):
        return PathCheck(PathStatus.unavailable, "the vault answered an unexpected metadata body")
    current = str(data.get("current_version", ""))
    version = (data.get("versions") or {}).get(current)
    if isinstance(version, dict) and (version.get("destroyed") or _is_past(version, now)):
        return PathCheck(
            PathStatus.version_deleted,
            f"the current version ({current}) of {where} is deleted or destroyed",
        )
    return PathCheck(PathStatus.found, f"{where} exists (version {current})")


def _is_past(version: dict[str, Any], now: datetime) -> bool:
    # deletion_time is "" when no deletion is scheduled; it may also lie in the future
    # (delete_version_after), in which case the version is still readable.
    raw = version.get("deletion_time") or ""
    try:
        when = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return False
    return when.tzinfo is not None and when <= now


def build_vault_paths(settings: Settings) -> VaultPaths:
    if settings.vault_addr:
        # An address without a token is a misconfiguration the vault answers with 403:
        # the secrets then show VaultAccessDenied rather than silently going unchecked.
        token = settings.vault_token.get_secret_value() if settings.vault_token else ""
        return HvacVaultPaths(
            settings.vault_addr,
            token,
            settings.vault_mount_template,
            timeout_seconds=settings.vault_timeout_seconds,
        )
    return UncheckedVaultPaths(settings.vault_mount_template)
