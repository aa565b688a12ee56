"""`tenantplane`: the operator's command (serve, migrate, tenants)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from dataclasses import asdict, astuple
from importlib.metadata import version as package_version
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import credentials as alerting_credentials
from tenantplane.alerting.cli import app as alerting_app
from tenantplane.apikey import service as apikey_service
from tenantplane.apikey.cli import OPERATOR_IDENTITY
from tenantplane.apikey.cli import app as apikey_app
from tenantplane.apikey.schemas import ApiKeyCreated
from tenantplane.billing import cli as billing_cli
from tenantplane.cli_support import (
    DEBUG_KEY,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    CliError,
    JsonLogsOption,
    JsonOption,
    OperatorGroup,
    database_unavailable,
    echo_json,
    echo_result,
    load_settings,
    refuse_simulated_billing,
    run_in_transaction,
)
from tenantplane.cluster.cli import simulator_app
from tenantplane.config import Settings
from tenantplane.console.cli import console_login
from tenantplane.db.migrate import MigrationRefused, upgrade
from tenantplane.db.urls import display_url
from tenantplane.doctor import Finding, diagnose
from tenantplane.event.cli import app as events_app
from tenantplane.event.log import append, append_all, operator_event
from tenantplane.event.webhook import service as webhook_service
from tenantplane.http.listen import CannotListen, bind_listeners
from tenantplane.member.cli import app as member_app
from tenantplane.member.models import Role
from tenantplane.tenant import lifecycle
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
tenant_app = typer.Typer(
    help="Create, change, list, suspend, resume and cancel tenants.", no_args_is_help=True
)
app.add_typer(tenant_app, name="tenant")
app.add_typer(apikey_app, name="apikey")
app.add_typer(member_app, name="member")
app.add_typer(alerting_app, name="alerting")
app.add_typer(simulator_app, name="simulator")
app.add_typer(billing_cli.billing_app, name="billing")
app.add_typer(events_app, name="events")
keys_app = typer.Typer(help="The secret key and the keys derived from it.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
app.command("console-login")(console_login)
tenant_app.command("cancel")(billing_cli.tenant_cancel)
tenant_app.command("credit")(billing_cli.tenant_credit)

console = Console()

BOOTSTRAP_KEY_NAME = "bootstrap"


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
    except MigrationRefused as exc:
        raise CliError("MIGRATION_REFUSED", str(exc), EXIT_REFUSED) from exc
    except (OperationalError, DBAPIError, OSError) as exc:
        raise database_unavailable(settings.database_url, exc) from exc


@app.command()
def migrate(as_json: JsonOption = False) -> None:
    """Bring the database schema up to date (idempotent)."""
    settings = load_settings()
    _migrate(settings)
    echo_result(
        as_json,
        {"database": display_url(settings.database_url), "upToDate": True},
        "database schema is up to date",
    )


def _listen(host: str, port: int, host_option: str, port_option: str) -> list[socket.socket]:
    """Bound sockets, or the error naming the option to change: exit 3 when another program
    listens there, 2 when the host or port cannot work here."""
    try:
        return bind_listeners(host, port, host_option=host_option, port_option=port_option)
    except CannotListen as exc:
        raise _cannot_listen(exc) from exc


def _cannot_listen(exc: CannotListen) -> CliError:
    code, exit_code = (
        ("ADDRESS_IN_USE", EXIT_UNAVAILABLE) if exc.in_use else ("CANNOT_LISTEN", EXIT_USAGE)
    )
    return CliError(code, exc.message, exit_code)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8080,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Processes serving the API (default: one per usable core on PostgreSQL, "
            "1 on SQLite); with more than one, the reconcilers run in one more process.",
        ),
    ] = None,
    as_json: JsonLogsOption = False,
) -> None:
    """Migrate if needed, then serve the API and run the reconcilers (logs on stderr).

    An address that cannot be listened on is refused before the migration: exit 3 when
    another program listens there, 2 when the host or port cannot work here.
    """
    from tenantplane.server import serve as serve_app

    settings = load_settings(json_logs=as_json)
    refuse_simulated_billing(settings)
    sockets = _listen(host, port, "--host", "--port N (make serve PORT=N)")
    try:
        _migrate(settings)
        code = serve_app(settings, host, port, sockets, workers)
    except CannotListen as exc:
        # The port taken in the instant `serve --workers N` rebinds it (http/listen.py).
        raise _cannot_listen(exc) from exc
    finally:
        for sock in sockets:
            sock.close()
    if code:
        raise typer.Exit(code)


@app.command()
def worker(
    metrics_host: Annotated[
        str, typer.Option(help="Address of the metrics endpoint (with --metrics-port).")
    ] = "127.0.0.1",
    metrics_port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Serve Prometheus metrics on this port (/metrics)."),
    ] = None,
    as_json: JsonLogsOption = False,
) -> None:
    """Run the reconcilers only (beside API replicas that set RUN_RECONCILERS=false)."""
    from tenantplane.reconcile.worker import run_worker
    from tenantplane.reconcilers import build_supervisor

    settings = load_settings(json_logs=as_json)
    refuse_simulated_billing(settings)
    sockets = None
    if metrics_port is not None:
        sockets = _listen(metrics_host, metrics_port, "--metrics-host", "--metrics-port N")
    try:
        asyncio.run(run_worker(settings, build_supervisor, metrics_sockets=sockets))
    finally:
        for sock in sockets or []:
            sock.close()


@keys_app.command("rotate")
def keys_rotate(as_json: JsonOption = False) -> None:
    """Re-encrypt stored credentials (alerting backends' credentials, webhooks' signing
    secrets) under TENANTPLANE_SECRET_KEY (after changing it, with the old key in
    TENANTPLANE_SECRET_KEY_FALLBACKS); count the API keys still hashed otherwise."""
    settings = load_settings()
    keys = settings.keyring()

    async def work(session: AsyncSession) -> dict[str, Any]:
        try:
            reencrypted = await alerting_credentials.reencrypt_credentials(session, keys)
            reencrypted += await webhook_service.reencrypt_secrets(session, keys)
        except ValueError as exc:
            raise CliError("UNKNOWN_KEY", str(exc), EXIT_REFUSED) from exc
        return {
            "keyDerivation": keys.current.derivation,
            "credentialsReencrypted": reencrypted,
            "apiKeysAwaitingRehash": await apikey_service.count_awaiting_rehash(session, keys),
        }

    result = run_in_transaction(settings, work)
    echo_result(
        as_json,
        result,
        f"{result['credentialsReencrypted']} stored credentials re-encrypted under "
        f"{result['keyDerivation']}; {result['apiKeysAwaitingRehash']} API keys are re-hashed "
        "on their next use (keep the fallbacks until this is 0, or until those keys may stop "
        "working)",
    )


@tenant_app.command("create")
def tenant_create(
    name: str,
    plan: Annotated[Plan, typer.Option(help="Billing plan.")] = Plan.starter,
    admin_email: Annotated[str | None, typer.Option(help="Add this email as an admin.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Create a tenant, its first admin and an admin API key named `bootstrap` (shown once)."""
    settings = load_settings()
    keys = settings.keyring()

    async def work(session: AsyncSession) -> dict[str, Any]:
        tenant = await tenant_service.create(session, name, plan, admin_email)
        issued = await apikey_service.issue(
            session,
            keys=keys,
            tenant_id=tenant.id,
            display_name=BOOTSTRAP_KEY_NAME,
            role=Role.admin,
            created_by=admin_email.lower() if admin_email else OPERATOR_IDENTITY,
        )
        # The operator's changes, audited as the API's are (actor: the operator).
        changes = [operator_event("tenant.create", "tenant", tenant.name, plan=tenant.plan.value)]
        if admin_email:
            changes.append(operator_event("member.create", "member", admin_email.lower()))
        changes.append(operator_event("apikey.create", "apikey", issued.key.id))
        await append_all(session, [(tenant.id, change) for change in changes])
        # As the API answers a key's creation: the raw key is in this document only.
        api_key = ApiKeyCreated.of(issued.key, issued.raw_key)
        return {
            "tenant": _tenant_json(tenant),
            "apiKey": api_key.model_dump(mode="json", by_alias=True, exclude_none=True),
        }

    created = run_in_transaction(settings, work)
    if as_json:
        echo_json(created)
        return
    tenant, api_key = created["tenant"], created["apiKey"]
    console.print(f"tenant [bold]{tenant['name']}[/bold] created (plan {tenant['plan']})")
    console.print(f"admin API key {api_key['id']} (shown once, keep it safe):")
    typer.echo(api_key["key"])


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
    as_json: JsonOption = False,
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
        given = {
            "plan": plan.value if plan is not None else None,
            "enforceMetricsLimit": enforce_metrics_limit,
            "enforceLogLimit": enforce_log_limit,
        }
        changed = {key: value for key, value in given.items() if value is not None}
        await append(
            session, tenant.id, operator_event("tenant.update", "tenant", tenant.name, **changed)
        )
        return _tenant_json(tenant)

    tenant = run_in_transaction(settings, work)
    echo_result(
        as_json,
        tenant,
        f"tenant {name} updated: plan {tenant['plan']}, "
        f"enforceMetricsLimit {tenant['enforceMetricsLimit']}, "
        f"enforceLogLimit {tenant['enforceLogLimit']}",
    )


def _change_state(
    name: str, change: Callable[[AsyncSession, str], Awaitable[Tenant]], as_json: bool
) -> None:
    async def work(session: AsyncSession) -> dict[str, Any]:
        return _tenant_json(await change(session, name))

    # The change is logged (an audit trail) on stderr: stdout carries the result.
    tenant = run_in_transaction(load_settings(), work)
    echo_result(as_json, tenant, f"tenant {name} is {tenant['state']}")


@tenant_app.command("suspend")
def tenant_suspend(name: str, as_json: JsonOption = False) -> None:
    """Suspend a tenant: read-only (writes refused with TENANT_SUSPENDED) until resumed."""
    _change_state(name, lifecycle.suspend, as_json)


@tenant_app.command("resume")
def tenant_resume(name: str, as_json: JsonOption = False) -> None:
    """Resume a suspended tenant (whoever suspended it): writes are accepted again."""
    _change_state(name, lifecycle.resume, as_json)


@tenant_app.command("list")
def tenant_list(as_json: JsonOption = False) -> None:
    """List tenants."""

    async def work(session: AsyncSession) -> list[dict[str, Any]]:
        return [_tenant_json(tenant) for tenant in await tenant_service.list_all(session)]

    tenants = run_in_transaction(load_settings(), work)
    if as_json:
        echo_json(tenants)
        return
    table = Table("name", "plan", "enforceMetricsLimit", "enforceLogLimit", "state")
    for tenant in tenants:
        table.add_row(
            tenant["name"],
            tenant["plan"],
            str(tenant["enforceMetricsLimit"]),
            str(tenant["enforceLogLimit"]),
            tenant["state"],
        )
    console.print(table)


@app.command()
def doctor(as_json: JsonOption = False) -> None:
    """Stored names today's rules refuse (written before a rule was tightened): exit 1 when any.

    Each is left as it is; replace it (a new cluster or secret of a valid name, the old one
    deleted). docs/operations.md, "Stored names".
    """

    async def work(session: AsyncSession) -> list[Finding]:
        return await diagnose(session)

    findings = run_in_transaction(load_settings(), work)
    if as_json:
        echo_json([asdict(finding) for finding in findings])
    elif findings:
        table = Table("kind", "tenant", "name", "field", "problem")
        for finding in findings:
            table.add_row(*(escape(repr(value)[1:-1]) for value in astuple(finding)))
        console.print(table)
    else:
        console.print("no stored name is refused by today's rules")
    if findings:
        raise typer.Exit(EXIT_REFUSED)
