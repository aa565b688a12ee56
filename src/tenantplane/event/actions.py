"""What each write of the API records: its audit action and the kind of resource it changes.

One row per mutating route (method, path template below the API's prefix). The application
refuses to start with a mutating tenant route missing here (``check_every_write_audited``),
so a new route cannot ship without its event.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tenantplane.http.route_index import ApiRoute

API_PREFIX = "/api/v1"
_TENANT = "/tenants/{tenant}"


@dataclass(frozen=True)
class AuditAction:
    action: str
    kind: str
    # Where the resource's name is: a path parameter, "" for the created resource's (the
    # last segment of the Location the route answered), or None for the tenant's own name.
    name_from: str | None
    # The name of a resource the tenant has exactly one of (the alerting document's parts).
    fixed_name: str = ""


def _row(
    method: str, path: str, action: str, kind: str, name_from: str | None, fixed: str = ""
) -> tuple[tuple[str, str], AuditAction]:
    return (method, _TENANT + path), AuditAction(action, kind, name_from, fixed)


AUDIT_ACTIONS: dict[tuple[str, str], AuditAction] = dict(
    [
        _row("PATCH", "", "tenant.update", "tenant", None),
        _row("POST", "/clusters", "cluster.create", "cluster", ""),
        _row("PATCH", "/clusters/{name}", "cluster.update", "cluster", "name"),
        _row("DELETE", "/clusters/{name}", "cluster.delete", "cluster", "name"),
        _row(
            "POST", "/clusters/{name}/credentials", "cluster.credentials.create", "cluster", "name"
        ),
        _row("POST", "/secrets", "secret.create", "secret", ""),
        _row("PATCH", "/secrets/{name}", "secret.update", "secret", "name"),
        _row("DELETE", "/secrets/{name}", "secret.delete", "secret", "name"),
        _row("POST", "/members", "member.create", "member", ""),
        _row("PATCH", "/members/{email}", "member.update", "member", "email"),
        _row("DELETE", "/members/{email}", "member.delete", "member", "email"),
        _row("POST", "/apikeys", "apikey.create", "apikey", ""),
        _row("DELETE", "/apikeys/{id}", "apikey.revoke", "apikey", "id"),
        _row("POST", "/billing/portal-session", "billing.portal_session.create", "tenant", None),
        _row("PUT", "/alerting/config", "alerting.config.put", "alerting", None, "config"),
        _row("DELETE", "/alerting/config", "alerting.config.reset", "alerting", None, "config"),
        _row("PUT", "/alerting/global", "alerting.global.put", "alerting", None, "global"),
        _row("PUT", "/alerting/route", "alerting.root_route.put", "alerting", None, "route"),
        _row(
            "PUT",
            "/alerting/receivers/{name}",
            "alerting.receiver.put",
            "alerting.receiver",
            "name",
        ),
        _row(
            "DELETE",
            "/alerting/receivers/{name}",
            "alerting.receiver.delete",
            "alerting.receiver",
            "name",
        ),
        _row("PUT", "/alerting/routes/{id}", "alerting.route.put", "alerting.route", "id"),
        _row("DELETE", "/alerting/routes/{id}", "alerting.route.delete", "alerting.route", "id"),
        _row(
            "PUT",
            "/alerting/templates/{filename}",
            "alerting.template.put",
            "alerting.template",
            "filename",
        ),
        _row(
            "DELETE",
            "/alerting/templates/{filename}",
            "alerting.template.delete",
            "alerting.template",
            "filename",
        ),
        _row(
            "PUT",
            "/alerting/time-intervals/{name}",
            "alerting.time_interval.put",
            "alerting.time_interval",
            "name",
        ),
        _row(
            "DELETE",
            "/alerting/time-intervals/{name}",
            "alerting.time_interval.delete",
            "alerting.time_interval",
            "name",
        ),
        _row("POST", "/webhooks", "webhook.create", "webhook", ""),
        _row("PATCH", "/webhooks/{id}", "webhook.update", "webhook", "id"),
        _row("DELETE", "/webhooks/{id}", "webhook.delete", "webhook", "id"),
        _row("POST", "/webhooks/{id}/rotate-secret", "webhook.secret.rotate", "webhook", "id"),
        _row("POST", "/webhooks/{id}/ping", "webhook.ping.send", "webhook", "id"),
        _row(
            "POST",
            "/webhooks/{id}/deliveries/{delivery}/redeliver",
            "webhook.delivery.redeliver",
            "webhook",
            "id",
        ),
    ]
)


def audit_action(method: str, template: str) -> AuditAction | None:
    return AUDIT_ACTIONS.get((method, template.removeprefix(API_PREFIX)))


def check_every_write_audited(routes: Iterable[ApiRoute]) -> None:
    """Raise when a mutating tenant route has no audit action (or a row names no route)."""
    writes = {
        (route.method, route.path.removeprefix(API_PREFIX))
        for route in routes
        if route.method != "GET" and route.path.startswith(API_PREFIX + _TENANT)
    }
    if missing := sorted(writes - AUDIT_ACTIONS.keys()):
        raise RuntimeError(f"writes without an audit action (event/actions.py): {missing}")
