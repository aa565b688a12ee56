"""`tenantplane`: the operator's command (serve, migrate, tenants)."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting.cli import app as alerting_app
from tenantplane.apikey import service as apikey_service
from tenantplane.billing import cli as billing_cli
from tenantplane.cli_support import run_in_transaction
from tenantplane.cluster.cli import simulator_app
from tenantplane.config import Settings
from tenantplane.db.migrate import upgrade
from tenantplane.member.models import Role
from tenantplane.tenant import service as tenant_service
from tenantplane.tenant.models import Plan, Tenant
from tenantplane.tenant.schemas import TenantRead

app = typer.Typer(help="Operate a tenantplane control plane.", no_args_is_help=True)
tenant_app = typer.Typer(help="Create, change and list tenants.", no_args_is_help=True)
app.add_typer(tenant_app, name="tenant")
app.add_typer(alerting_app, name="alerting")
app.add_typer(simulator_app, name="simulator")
app.add_typer(billing_cli.billing_app, name="billing")
tenant_app.command("cancel")(billing_cli.tenant_cancel)
tenant_app.command("credit")(billing_cli.tenant_credit)

console = Console()
T = TypeVar("T")

BOOTSTRAP_KEY_NAME = "bootstrap"
# Recorded as createdBy of a bootstrap key made without --admin-email.
OPERATOR_IDENTITY = "platform-operator"


def _tenant_json(tenant: Tenant) -> dict[str, Any]:
    return TenantRead.of(tenant).model_dump(mode="json", by_alias=True)


@app.command()
def migrate() -> None:
    """Bring the database schema up to date (idempotent)."""
    upgrade(Settings().database_url)
    console.print("database schema is up to date")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8080,
) -> None:
    """Migrate if needed, then serve the API and run the reconcilers."""
    import uvicorn

    from tenantplane.app import create_app

    settings = Settings()
    upgrade(settings.database_url)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        # Forwarded headers are honoured by the app itself, from TRUSTED_PROXIES only.
        proxy_headers=False,
        access_log=False,
        log_config=None,
    )


@app.command()
def worker() -> None:
    """Run the reconcilers only (beside API replicas that set RUN_RECONCILERS=false)."""
    from tenantplane.reconcile.worker import run_worker

    asyncio.run(run_worker(Settings()))


@tenant_app.command("create")
def tenant_create(
    name: str,
    plan: Annotated[Plan, typer.Option(help="Billing plan.")] = Plan.starter,
    admin_email: Annotated[str | None, typer.Option(help="Add this email as an admin.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create a tenant, its first admin and an admin API key named `bootstrap` (shown once)."""
    settings = Settings()
    secret = settings.api_key_secret()

    async def work(session: AsyncSession) -> tuple[Tenant, apikey_service.IssuedKey]:
        tenant = await tenant_service.create(session, name, plan, admin_email)
        issued = await apikey_service.issue(
            session,
            secret=secret,
            tenant_id=tenant.id,
            display_name=BOOTSTRAP_KEY_NAME,
            role=Role.admin,
            created_by=admin_email.lower() if admin_email else OPERATOR_IDENTITY,
        )
        return tenant, issued

    tenant, issued = run_in_transaction(settings, work)
    api_key = {
        "id": issued.key.id,
        "key": issued.raw_key,
        "role": issued.key.role.value,
        "displayName": issued.key.display_name,
    }
    if as_json:
        typer.echo(json.dumps({"tenant": _tenant_json(tenant), "apiKey": api_key}))
        return
    console.print(f"tenant [bold]{tenant.name}[/bold] created (plan {tenant.plan.value})")
    console.print(f"admin API key {api_key['id']} (shown once, keep it safe):")
    typer.echo(issued.raw_key)


@tenant_app.command("update")
def tenant_update(
    name: str,
    plan: Annotated[Plan | None, typer.Option(help="Billing plan.")] = None,
    enforce_metrics_limit: Annotated[
        bool | None, typer.Option("--enforce-metrics-limit/--no-enforce-metrics-limit")
    ] = None,
    enforce_log_limit: Annotated[
        bool | None, typer.Option("--enforce-log-limit/--no-enforce-log-limit")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Change a tenant's platform-managed fields."""
    settings = Settings()

    async def work(session: AsyncSession) -> dict[str, Any]:
        tenant = await tenant_service.update_platform_fields(
            session, name, plan, enforce_metrics_limit, enforce_log_limit
        )
        return _tenant_json(tenant)

    tenant = run_in_transaction(settings, work)
    typer.echo(json.dumps(tenant) if as_json else f"tenant {name} updated: {tenant}")


@tenant_app.command("list")
def tenant_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """List tenants."""

    async def work(session: AsyncSession) -> list[dict[str, Any]]:
        return [_tenant_json(tenant) for tenant in await tenant_service.list_all(session)]

    tenants = run_in_transaction(Settings(), work)
    if as_json:
        typer.echo(json.dumps(tenants))
        return
    table = Table("name", "plan", "enforceMetricsLimit", "enforceLogLimit")
    for tenant in tenants:
        table.add_row(
            tenant["name"],
            tenant["plan"],
            str(tenant["enforceMetricsLimit"]),
            str(tenant["enforceLogLimit"]),
        )
    console.print(table)
