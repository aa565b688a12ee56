"""The alerting backend port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

Document = dict[str, Any]


@dataclass(frozen=True)
class Credentials:
    """How to reach one tenant in a multi-tenant backend."""

    org_id: str
    auth: str  # none | basic | bearer
    username: str | None = None
    secret: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Target:
    tenant: str
    credentials: Credentials | None = None
    # Every tenant's document (this tenant's new one included), for backends that render
    # all tenants into one configuration.
    all_documents: Mapping[str, Document] = field(default_factory=dict)


class BackendRejected(Exception):
    """The backend refused the configuration; nothing was changed there."""


class BackendUnavailable(Exception):
    """The backend could not be reached or failed; retry later."""


class BackendNamingError(Exception):
    """The configuration breaks a rule of this backend (path of the field, message)."""

    def __init__(self, message: str, path: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.code = code


class AlertingBackend:
    """Applies tenants' configurations somewhere. The database stays the source of truth."""

    name = "database"
    enabled = True
    needs_credentials = False
    renders_all_tenants = False

    def check(self, tenant: str, document: Document) -> None:
        """Rules of this backend beyond Alertmanager's own (raise BackendNamingError)."""

    @asynccontextmanager
    async def render_lock(self) -> AsyncIterator[None]:
        """Held while reading every tenant's documents and applying them, by backends that
        render all tenants into one configuration (one render at a time); others: none."""
        yield

    async def fetch(self, target: Target) -> Document | None:
        """The configuration the backend already holds for a tenant new to this service."""
        return None

    async def apply(self, target: Target, document: Document) -> None:
        """Make ``document`` the tenant's live configuration."""

    async def remove(self, target: Target) -> None:
        """Forget the tenant's configuration (reset to the default)."""

    async def aclose(self) -> None:
        """Close the connections to the backend (at shutdown)."""


class DatabaseBackend(AlertingBackend):
    """The default: the configuration lives in this service's database only."""


class DisabledBackend(AlertingBackend):
    name = "disabled"
    enabled = False
