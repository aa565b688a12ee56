"""tpctl members, apikeys, invoices, tenant, versions and plans."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from tenantplane_client import models as m
from tenantplane_client.cli.common import (
    OutputOption,
    client,
    group,
    handled,
)
from tenantplane_client.cli.output import render, say

members_app = group("Tenant members (email and role).")
apikeys_app = group("API keys.")
invoices_app = group("Invoices, receipt links and the payment portal.")
tenant_app = group("The tenant record.")
versions_app = group("Kubernetes versions clusters may run.")
plans_app = group("The plan catalogue.")

# --- members, API keys ------------------------------------------------------------------

RoleOption = Annotated[m.Role, typer.Option(help="admin or readonly")]


@members_app.command("list")
@handled
def members_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.members.list(), output, ("email", "role"))


@members_app.command("get")
@handled
def members_get(email: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.members.get(email), output, ("email", "role"))


@members_app.command("create")
@handled
def members_create(email: str, role: RoleOption, output: OutputOption = None) -> None:
    """Add a member (they sign in through OIDC)."""
    with client() as api:
        render(api.members.add(email, role), output, ("email", "role"))


@members_app.command("update")
@handled
def members_update(email: str, role: RoleOption, output: OutputOption = None) -> None:
    with client() as api:
        render(api.members.update(email, role), output, ("email", "role"))


@members_app.command("delete")
@handled
def members_delete(email: str) -> None:
    """Remove a member (the last admin cannot be removed)."""
    with client() as api:
        api.members.remove(email)
    say(f"Member {email} removed")


APIKEY_COLUMNS = ("id", "displayName", "role", "createdBy", "expiresAt", "lastUsedAt")


@apikeys_app.command("list")
@handled
def apikeys_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.apikeys.list(), output, APIKEY_COLUMNS)


@apikeys_app.command("get")
@handled
def apikeys_get(key_id: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.apikeys.get(key_id), output, APIKEY_COLUMNS)


@apikeys_app.command("create")
@handled
def apikeys_create(
    name: Annotated[str, typer.Option("--name", help="Display name")],
    role: RoleOption,
    expires_at: Annotated[str | None, typer.Option(help="RFC 3339, with an offset")] = None,
    output: OutputOption = None,
) -> None:
    """Create a key; its raw value (svc_…) is printed this once."""
    body: dict[str, Any] = {"displayName": name, "role": role}
    if expires_at:
        body["expiresAt"] = expires_at
    with client() as api:
        render(api.apikeys.create(body), output, ("id", "displayName", "role", "key"))


@apikeys_app.command("delete")
@handled
def apikeys_delete(key_id: str) -> None:
    """Revoke a key."""
    with client() as api:
        api.apikeys.revoke(key_id)
    say(f"API key {key_id} revoked")


# --- billing, tenant, catalogues ----------------------------------------------------------

INVOICE_COLUMNS = (
    "name",
    "status.phase",
    "billingPeriod.start",
    "billingPeriod.end",
    "status.currency",
    "status.total",
)


@invoices_app.command("list")
@handled
def invoices_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.invoices.list(), output, INVOICE_COLUMNS)


@invoices_app.command("get")
@handled
def invoices_get(name: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.invoices.get(name), output, INVOICE_COLUMNS)


@invoices_app.command("receipt")
@handled
def invoices_receipt(name: str, output: OutputOption = None) -> None:
    """Print a fresh, short-lived receipt link (open it now; it is not saved)."""
    with client() as api:
        render(api.invoices.receipt(name), output, ("url",))


@invoices_app.command("portal")
@handled
def invoices_portal(output: OutputOption = None) -> None:
    """Print fresh, short-lived payment-portal links (open them now; they are not saved)."""
    with client() as api:
        render(api.billing.portal_session(), output, ("overviewURL", "updatePaymentMethodURL"))


@tenant_app.command("get")
@handled
def tenant_get(output: OutputOption = None) -> None:
    with client() as api:
        render(api.get_tenant(), output)


@versions_app.command("list")
@handled
def versions_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.versions(), output, ("version", "kubernetesVersion", "default", "retiring"))


@plans_app.command("list")
@handled
def plans_list(output: OutputOption = None) -> None:
    with client() as api:
        render(
            api.plans(),
            output,
            ("name", "limits.clusters", "prices.currency", "prices.platformFee"),
        )
