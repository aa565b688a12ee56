"""`tenantplane`: the operator's command (serve, migrate, tenants)."""

from __future__ import annotations

import asyncio
import json
from importlib.metadata import version as package_version
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting.cli import app as alerting_app
from tenantplane.apikey import service as apikey_service
from tenantplane.billing import cli as billing_cli
from tenantplane.cli_support import (
    DEBUG_KEY,
    EXIT_USAGE,
    CliError,
    OperatorGroup,
    database_unavailable,
    load_settings,
    run_in_transaction,
)
from tenantplane.cluster.cli import simulator_app
from tenantplane.config import Settings
from tenantplane.db.migrate import upgrade
from tenantplane.db.urls import display_url
from tenantplane.member.models import Role
from tenantplane.tenant import service as tenant_service
from tenantplane.tenant.models import Plan, Tenant
from tenantplane.tenant.schemas import TenantRead

app = typer.Typer(
    cls=OperatorGroup,
    help="Operate a tenantplane control plane.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Plain help: the rich layout labels every flag `<bool>`.
    rich_markup_mode=None,
)
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"tenantplane {package_version('tenantplane')}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of a failure.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Operate a tenantplane control plane."""
    ctx.meta[DEBUG_KEY] = debug


def _tenant_json(tenant: Tenant) -> dict[str, Any]:
    return TenantRead.of(tenant).model_dump(mode="json", by_alias=True)


def _migrate(settings: Settings) -> None:
    try:
        upgrade(settings.database_url)
    except (OperationalError, DBAPIError, OSError) as exc:
        raise database_unavailable(settings.database_url, exc) from exc


def _echo_json(document: object) -> None:
    typer.echo(json.dumps(document))


JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]


@app.command()
def migrate(as_json: JsonOption = False) -> None:
    """Bring the database schema up to date (idempotent)."""
    settings = load_settings()
    _migrate(settings)
    if as_json:
        _echo_json({"database": display_url(settings.database_url), "upToDate": True})
        return
    console.print("database schema is up to date")


def serving_summary(settings: Settings, host: str, port: int) -> str:
    """The one start-up line: where it listens and what it is connected to."""
    return (
        f"tenantplane listening on http://{host}:{port}"
        f" data dir {settings.data_dir}"
        f" database {display_url(settings.database_url)}"
        f" orchestrator {settings.orchestrator}"
        f" alerting {settings.alerting_backend}"
        f" billing {settings.billing_provider}"
    )


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8080,
) -> None:
    """Migrate if needed, then serve the API and run the reconcilers."""
    import uvicorn

    from tenantplane.app import create_app

    settings = load_settings()
    _migrate(settings)
    typer.echo(serving_summary(settings, host, port))
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

    asyncio.run(run_worker(load_settings()))


@tenant_app.command("create")
def tenant_create(
    name: str,
    plan: Annotated[Plan, typer.Option(help="Billing plan.")] = Plan.starter,
    admin_email: Annotated[str | None, typer.Option(help="Add this email as an admin.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create a tenant, its first admin and an admin API key named `bootstrap` (shown once)."""
    settings = load_settings()
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
    if plan is None and enforce_metrics_limit is None and enforce_log_limit is None:
        raise CliError(
            "NOTHING_TO_CHANGE",
            "nothing to change: give --plan, --[no-]enforce-metrics-limit "
            "or --[no-]enforce-log-limit",
            EXIT_USAGE,
        )
    settings = load_settings()

    async def work(session: AsyncSession) -> dict[str, Any]:
        tenant = await tenant_service.update_platform_fields(
            session, name, plan, enforce_metrics_limit, enforce_log_limit
        )
        return _tenant_json(tenant)

    tenant = run_in_transaction(settings, work)
    if as_json:
        _echo_json(tenant)
        return
    typer.echo(
        f"tenant {name} updated: plan {tenant['plan']}, "
        f"enforceMetricsLimit {tenant['enforceMetricsLimit']}, "
        f"enforceLogLimit {tenant['enforceLogLimit']}"
    )


@tenant_app.command("list")
def tenant_list(
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON array.")] = False,
) -> None:
    """List tenants."""

    async def work(session: AsyncSession) -> list[dict[str, Any]]:
        return [_tenant_json(tenant) for tenant in await tenant_service.list_all(session)]

    tenants = run_in_transaction(load_settings(), work)
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
