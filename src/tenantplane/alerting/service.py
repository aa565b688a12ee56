"""Business rules of the alerting configuration: one document per tenant, one ETag.

Every write locks the tenant's row, checks If-Match against the wrapper version, applies
its change to a copy of the stored document, validates the whole result as Alertmanager
would (and as the backend's own naming rules require), stores it (bumping the version) and
makes it due for the backend. Any failure raises before the request's transaction commits,
so a rejected write changes nothing. The backend is called after commit, by the
``alerting`` reconciler (``alerting.reconciler``): no row or advisory lock is ever held
across a call to Mimir or Alertmanager (docs/alerting.md, "Applying to the backend").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import secrets
from tenantplane.alerting.document import (
    SECTIONS,
    Document,
    clone,
    default_document,
    named_index,
    routes_using_receiver,
    routes_using_time_interval,
    without_nulls,
)
from tenantplane.alerting.models import AlertingCredentials
from tenantplane.alerting.redaction import restore_secrets
from tenantplane.alerting.repository import AlertingRepository
from tenantplane.alerting.validation import ConfigError
from tenantplane.alerting.validation.config import (
    check_template_filename,
    validate_config,
)
from tenantplane.alerting.validation.limits import check_route_depth
from tenantplane.alerting.validation.policy import Policy
from tenantplane.db.clock import clock_of
from tenantplane.http.errors import (
    ApiError,
    Conflict,
    NotFound,
    ServiceUnavailable,
    ValidationFailed,
)
from tenantplane.http.etag import check_if_match
from tenantplane.keys import KeyRing
from tenantplane.providers.alerting.base import (
    AlertingBackend,
    BackendNamingError,
    BackendRejected,
    BackendUnavailable,
    Credentials,
    Target,
)
from tenantplane.reconcile import wake_after_commit

T = TypeVar("T")
log = structlog.get_logger(__name__)
CREDENTIALS_RETRY_AFTER_SECONDS = 60
BACKEND_RETRY_AFTER_SECONDS = 5
INITIAL_VERSION = 1
ALERTING_RECONCILER = "alerting"


@dataclass(frozen=True)
class TenantRef:
    id: int
    name: str


@dataclass(frozen=True)
class Snapshot:
    document: Document
    version: int


@dataclass(frozen=True)
class Written(Generic[T]):
    value: T
    snapshot: Snapshot


@dataclass(frozen=True)
class Focus:
    """Where the written piece sits in the document, to report errors relative to the body."""

    prefix: str
    whole: str | None = None  # the field reported when the error concerns the whole piece


WHOLE_DOCUMENT = Focus("")


class AlertingDisabled(ApiError):
    def __init__(self) -> None:
        super().__init__(
            503, "the alerting proxy is not enabled in this deployment", code="ALERTING_DISABLED"
        )


# --- reading -----------------------------------------------------------------------------


async def _credentials(
    session: AsyncSession, backend: AlertingBackend, tenant: TenantRef, keys: KeyRing
) -> Credentials | None:
    """Refuse when the backend is off or lacks this tenant's credentials."""
    if not backend.enabled:
        raise AlertingDisabled()
    if not backend.needs_credentials:
        return None
    row = await AlertingRepository.from_session(session).get_credentials(tenant.id)
    if row is None:
        raise ServiceUnavailable(
            "the tenant's alerting credentials are not yet available; retry later",
            code="TENANT_CREDENTIALS_PENDING",
            retry_after=CREDENTIALS_RETRY_AFTER_SECONDS,
        )
    return credentials_of(row, keys)


def credentials_of(row: AlertingCredentials, keys: KeyRing) -> Credentials:
    secret = None
    if row.secret_ciphertext is not None:
        secret = secrets.decrypt(keys, row.secret_ciphertext, row.key_derivation)
    return Credentials(org_id=row.org_id, auth=row.auth.value, username=row.username, secret=secret)


async def read(
    session: AsyncSession,
    backend: AlertingBackend,
    tenant: TenantRef,
    keys: KeyRing,
    policy: Policy,
) -> Snapshot:
    credentials = await _credentials(session, backend, tenant, keys)
    row = await AlertingRepository.from_session(session).get(tenant.id)
    if row is None:
        initial = await _initial_document(backend, tenant, credentials, policy)
        return Snapshot(initial, INITIAL_VERSION)
    return Snapshot(row.document, row.resource_version)


async def _initial_document(
    backend: AlertingBackend, tenant: TenantRef, credentials: Credentials | None, policy: Policy
) -> Document:
    """What a tenant new to this service starts from: what its backend already holds, when
    that is a configuration the API can represent and validate, else the default."""
    try:
        existing = await backend.fetch(Target(tenant.name, credentials))
    except BackendRejected:
        existing = None
    except BackendUnavailable as exc:
        raise _unavailable(exc) from None
    if existing is None:
        return default_document()
    adopted: Document = without_nulls(existing)
    try:
        validate_config(adopted, policy)
    except ConfigError as exc:
        log.warning(
            "existing alerting configuration not adopted", tenant=tenant.name, error=exc.message
        )
        return default_document()
    return adopted


def _unavailable(exc: Exception) -> ServiceUnavailable:
    return ServiceUnavailable(
        str(exc), code="ALERTING_BACKEND_UNAVAILABLE", retry_after=BACKEND_RETRY_AFTER_SECONDS
    )


# --- writing -----------------------------------------------------------------------------


def _relative(path: str, focus: Focus) -> str | None:
    if not focus.prefix:
        return path or None
    if path == focus.prefix:
        return focus.whole
    for separator in (".", "["):
        if path.startswith(focus.prefix + separator):
            rest = path[len(focus.prefix) :]
            return rest[1:] if separator == "." else rest
    return path


async def write(
    session: AsyncSession,
    backend: AlertingBackend,
    tenant: TenantRef,
    keys: KeyRing,
    if_match: str | None,
    change: Callable[[Document], T],
    focus: Focus | Callable[[Document], Focus],
    *,
    reset: bool = False,
    policy: Policy,
) -> Written[T]:
    """Apply ``change`` to the tenant's document under its row lock; see the module doc."""
    credentials = await _credentials(session, backend, tenant, keys)
    repository = AlertingRepository.from_session(session)
    initial = None
    if await repository.get(tenant.id) is None:
        # Asked before any lock is taken: no lock is held across a backend call.
        initial = await _initial_document(backend, tenant, credentials, policy)
    row = await repository.lock(tenant.id, initial)
    check_if_match(if_match, row.resource_version)
    document = clone(row.document)
    value = change(document)
    where = focus(document) if callable(focus) else focus
    _keep_stored_secrets(document, row.document, where)
    unchanged = document == row.document
    if unchanged and not reset:
        return Written(value, Snapshot(row.document, row.resource_version))
    now = await clock_of(session).now()
    if not unchanged:
        _check(backend, tenant, document, where, policy)
        row.document = document
        row.updated_at = now
        await session.flush()
    # A reset always reaches the backend: it may hold what this service never adopted.
    await repository.mark_due(tenant.id, remove=reset, now=now)
    wake_after_commit(session, ALERTING_RECONCILER)
    return Written(value, Snapshot(row.document, row.resource_version))


def _keep_stored_secrets(document: Document, stored: Document, focus: Focus) -> None:
    """`<secret>` sent back (as readonly members read it) keeps the stored credential."""
    try:
        restore_secrets(document, stored)
    except ConfigError as exc:
        raise ValidationFailed(
            exc.message, field=_relative(exc.path, focus), code=exc.code
        ) from None


def _check(
    backend: AlertingBackend, tenant: TenantRef, document: Document, focus: Focus, policy: Policy
) -> None:
    """Alertmanager's rules and the policy's, then the backend's own; errors relative to
    the request body."""
    try:
        validate_config(document, policy)
        backend.check(tenant.name, document)
    except (ConfigError, BackendNamingError) as exc:
        raise ValidationFailed(
            exc.message, field=_relative(exc.path, focus), code=exc.code
        ) from None


# --- the changes each endpoint makes -------------------------------------------------------


def _route_depth(route: Any, path: str, level: int) -> None:
    """The depth limit, checked before anything recursive (normalising, copying) runs."""
    try:
        check_route_depth(route, path, level)
    except ConfigError as exc:
        raise ValidationFailed(exc.message, field=exc.path, code=exc.code) from None


def replace_document(body: dict[str, Any]) -> Callable[[Document], None]:
    for key in body:
        if key not in SECTIONS:
            raise ValidationFailed(f"unknown field: {key}", field=key, code="UNKNOWN_FIELD")
    _route_depth(body.get("route"), "route", 0)

    def change(document: Document) -> None:
        document.clear()
        document.update(default_document())
        document.update({"receivers": [], "route": None})
        document.update(without_nulls(body))

    return change


def reset_document(document: Document) -> None:
    document.clear()
    document.update(default_document())


def _upsert_named(section: str, entry: dict[str, Any]) -> Callable[[Document], tuple[Any, bool]]:
    """Insert or replace the entry of a named list; the flag says whether it is new."""

    def change(document: Document) -> tuple[Any, bool]:
        index = named_index(document, section, entry["name"])
        if index is None:
            document[section].append(entry)
            return entry, True
        document[section][index] = entry
        return entry, False

    return change


def _named_focus(section: str, name: str) -> Callable[[Document], Focus]:
    def focus(document: Document) -> Focus:
        return Focus(f"{section}[{named_index(document, section, name)}]")

    return focus


def _delete_named(
    section: str, name: str, what: str, in_use: Callable[[Document, str], Any], code: str
) -> Callable[[Document], None]:
    """Delete an entry of a named list, refused (409) while a route refers to it."""

    def change(document: Document) -> None:
        index = named_index(document, section, name)
        if index is None:
            raise NotFound(f"{what} {name}")
        if in_use(document, name):
            raise Conflict(
                f"{what} {name} is used by a route; change or delete the route first", code=code
            )
        del document[section][index]

    return change


def upsert_receiver(name: str, body: dict[str, Any]) -> Callable[[Document], tuple[Any, bool]]:
    return _upsert_named("receivers", {**without_nulls(body), "name": name})


def receiver_focus(name: str) -> Callable[[Document], Focus]:
    return _named_focus("receivers", name)


def delete_receiver(name: str) -> Callable[[Document], None]:
    return _delete_named("receivers", name, "receiver", routes_using_receiver, "RECEIVER_IN_USE")


def child_routes(document: Document) -> list[Any]:
    routes: list[Any] = document["route"].setdefault("routes", [])
    return routes


def put_route(index: int, body: dict[str, Any]) -> Callable[[Document], tuple[Any, bool]]:
    _route_depth(body, "", 1)
    route = without_nulls(body)

    def change(document: Document) -> tuple[Any, bool]:
        routes = child_routes(document)
        if index > len(routes):
            raise ValidationFailed(
                f"route index {index} is out of range: there are {len(routes)} child routes; "
                f"use {len(routes)} to append",
                field="id",
                code="ROUTE_INDEX_OUT_OF_RANGE",
            )
        if index == len(routes):
            routes.append(route)
            return route, True
        routes[index] = route
        return route, False

    return change


def delete_route(index: int) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        routes = child_routes(document)
        if index >= len(routes):
            raise NotFound(f"route {index}")
        del routes[index]
        if not routes:
            del document["route"]["routes"]

    return change


def put_root_route(body: dict[str, Any]) -> Callable[[Document], Any]:
    """The root route's own settings; its children are kept unless the body has `routes`."""
    _route_depth(body, "", 0)
    route = without_nulls(body)

    def change(document: Document) -> Any:
        if "routes" not in route and document["route"].get("routes"):
            route["routes"] = document["route"]["routes"]
        document["route"] = route
        return route

    return change


def put_global(body: dict[str, Any]) -> Callable[[Document], Any]:
    glob = without_nulls(body)

    def change(document: Document) -> Any:
        document["global"] = glob
        return glob

    return change


def put_template(filename: str, contents: str) -> Callable[[Document], tuple[str, bool]]:
    """Store the file; the flag says whether it is new (as for named lists)."""
    try:
        check_template_filename(filename, "filename")
    except ConfigError as exc:
        raise ValidationFailed(exc.message, field="filename", code=exc.code) from None

    def change(document: Document) -> tuple[str, bool]:
        created = filename not in document["templates"]
        document["templates"][filename] = contents
        return contents, created

    return change


def delete_template(filename: str) -> Callable[[Document], None]:
    def change(document: Document) -> None:
        if filename not in document["templates"]:
            raise NotFound(f"template {filename}")
        del document["templates"][filename]

    return change


def put_time_interval(name: str, intervals: list[Any]) -> Callable[[Document], tuple[Any, bool]]:
    return _upsert_named(
        "time_intervals", {"name": name, "time_intervals": without_nulls(intervals)}
    )


def time_interval_focus(name: str) -> Callable[[Document], Focus]:
    return _named_focus("time_intervals", name)


def delete_time_interval(name: str) -> Callable[[Document], None]:
    return _delete_named(
        "time_intervals", name, "time interval", routes_using_time_interval, "TIME_INTERVAL_IN_USE"
    )


# --- operators ---------------------------------------------------------------------------


async def withdraw(session: AsyncSession, backend: AlertingBackend, tenant: TenantRef) -> bool:
    """Take a cancelled tenant's configuration off the backend (Mimir deletes it; the shared
    Alertmanager is rendered without it), after commit, through the reconciler. The stored
    document stays readable; cancelled tenants are left out of every later rendering. False
    when there is nothing to take off (no backend, or no credentials to reach this tenant)."""
    if not backend.enabled:
        return False
    repository = AlertingRepository.from_session(session)
    if backend.needs_credentials and await repository.get_credentials(tenant.id) is None:
        return False
    await repository.lock(tenant.id)
    await repository.mark_due(tenant.id, remove=True, now=await clock_of(session).now())
    wake_after_commit(session, ALERTING_RECONCILER)
    return True


async def mark_stored_due(session: AsyncSession, backend: AlertingBackend) -> list[str]:
    """Every stored configuration of a live tenant due for the backend again (after the
    backend lost it); the reconciler applies them. Returns the tenants concerned."""
    if not backend.enabled:
        raise AlertingDisabled()
    now = await clock_of(session).now()
    return await AlertingRepository.from_session(session).mark_all_due(now)


@dataclass(frozen=True)
class Finding:
    """A stored configuration that the current rules refuse (stored before they existed)."""

    tenant: str
    field: str
    code: str
    message: str


async def check_stored(
    session: AsyncSession, backend: AlertingBackend, policy: Policy
) -> list[Finding]:
    """Every stored configuration through today's validation and the backend's rules."""
    findings: list[Finding] = []
    documents = await AlertingRepository.from_session(session).all_documents()
    for tenant, document in documents.items():
        try:
            validate_config(document, policy)
            backend.check(tenant, document)
        except (ConfigError, BackendNamingError) as exc:
            findings.append(Finding(tenant, exc.path, exc.code, exc.message))
    return findings
