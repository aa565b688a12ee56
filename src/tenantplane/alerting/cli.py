"""`tenantplane alerting …`: per-tenant backend credentials and re-applying configurations."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import credentials, service
from tenantplane.alerting.models import CredentialsAuth
from tenantplane.alerting.policy import policy_from_settings
from tenantplane.alerting.reconciler import AlertingReconciler
from tenantplane.alerting.repository import AlertingRepository
from tenantplane.cli_support import (
    EXIT_REFUSED,
    EXIT_USAGE,
    CliError,
    JsonOption,
    echo_result,
    load_settings,
    run_async,
    run_in_transaction,
)
from tenantplane.config import Settings
from tenantplane.db.base import rfc3339
from tenantplane.db.engine import Database
from tenantplane.http.errors import ServiceUnavailable
from tenantplane.providers.alerting.base import AlertingBackend
from tenantplane.providers.alerting.factory import backend_from_settings
from tenantplane.reconcile import ReconcilerRunner

app = typer.Typer(
    help="Alerting backends: tenant credentials and re-applying configurations.",
    no_args_is_help=True,
)


def _read_secret(auth: CredentialsAuth, from_stdin: bool) -> str | None:
    if auth is CredentialsAuth.none:
        return None
    label = "password" if auth is CredentialsAuth.basic else "token"
    if from_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    secret: str = typer.prompt(label, hide_input=True)
    return secret


def _credentials_json(info: credentials.CredentialsInfo) -> dict[str, Any]:
    """What may be shown of stored credentials: never the secret."""
    return {
        "tenant": info.tenant,
        "orgId": info.org_id,
        "auth": info.auth,
        "username": info.username,
        "updatedAt": rfc3339(info.updated_at),
    }


@app.command("set-credentials")
def set_credentials(
    tenant: str,
    org_id: Annotated[
        str | None, typer.Option(help="X-Scope-OrgID (default: the tenant name).")
    ] = None,
    auth: Annotated[CredentialsAuth, typer.Option(help="How to authenticate.")] = (
        CredentialsAuth.basic
    ),
    username: Annotated[str | None, typer.Option(help="Basic-auth user name.")] = None,
    secret_stdin: Annotated[
        bool,
        typer.Option(
            "--secret-stdin", help="Read the password or token from standard input (one line)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Store how the backend reaches TENANT (the secret is read from stdin or a prompt)."""
    settings = load_settings()
    secret = _read_secret(auth, secret_stdin)

    async def work(session: AsyncSession) -> credentials.CredentialsInfo:
        return await credentials.set_credentials(
            session,
            tenant_name=tenant,
            org_id=org_id or tenant,
            auth=auth,
            username=username,
            secret=secret,
            keys=settings.keyring(),
        )

    info = run_in_transaction(settings, work)
    echo_result(
        as_json,
        _credentials_json(info),
        f"credentials of tenant {info.tenant} set (org id {info.org_id}, auth {info.auth})",
    )


@app.command("clear-credentials")
def clear_credentials(tenant: str, as_json: JsonOption = False) -> None:
    """Forget TENANT's credentials (its alerting API answers 503 until they are set again)."""

    async def work(session: AsyncSession) -> bool:
        return await credentials.clear_credentials(session, tenant)

    removed = run_in_transaction(load_settings(), work)
    echo_result(
        as_json,
        {"tenant": tenant, "removed": removed},
        f"credentials of tenant {tenant} {'removed' if removed else 'were not set'}",
    )


@app.command("show-credentials")
def show_credentials(tenant: str, as_json: JsonOption = False) -> None:
    """Show TENANT's credentials, without the secret (JSON: null when unset)."""

    async def work(session: AsyncSession) -> credentials.CredentialsInfo | None:
        return await credentials.describe_credentials(session, tenant)

    info = run_in_transaction(load_settings(), work)
    if info is None:
        echo_result(as_json, None, f"tenant {tenant} has no alerting credentials")
        return
    document = _credentials_json(info)
    echo_result(as_json, document, "\n".join(f"{key}: {value}" for key, value in document.items()))


def _backend() -> tuple[Settings, AlertingBackend]:
    settings = load_settings()
    try:
        return settings, backend_from_settings(settings)
    except ValueError as exc:
        # A backend named without its address: the message names the missing variable.
        raise CliError("INVALID_SETTING", str(exc), EXIT_USAGE) from exc


async def _apply_now(
    database: Database, reconciler: AlertingReconciler, tenants: list[str]
) -> Sequence[tuple[str, str, str, bool]]:
    """Run the reconciler on the due configurations until none of ``tenants`` is due any
    more (a running reconciler may hold some for a moment), within one lease's time. One
    the backend cannot reach (no credentials) is left as it was."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + reconciler.lease_seconds
    runner = ReconcilerRunner(database, reconciler)
    while True:
        await runner.run_once()
        async with database.sessionmaker() as session:
            outcomes = await AlertingRepository.from_session(session).outcomes(tenants)
        settled = all(status == "unavailable" or not due for _, status, _, due in outcomes)
        if settled or loop.time() > give_up:
            return outcomes
        await asyncio.sleep(0.1)


@app.command("sync")
def sync(as_json: JsonOption = False) -> None:
    """Apply every stored configuration to the configured backend again (now, through the
    alerting reconciler); refusals are listed, exit 1 when there is any."""
    settings, backend = _backend()

    async def work() -> tuple[list[str], list[tuple[str, str]]]:
        database = Database.from_settings(settings)
        try:
            async with database.transaction() as session:
                tenants = await service.mark_stored_due(session, backend)
            reconciler = AlertingReconciler(
                backend,
                database,
                settings.keyring(),
                backend_timeout_seconds=settings.alerting_backend_timeout_seconds,
            )
            outcomes = await _apply_now(database, reconciler, tenants)
        finally:
            await backend.aclose()
            await database.dispose()
        unavailable = [error for _, status, error, _ in outcomes if status == "unavailable"]
        if unavailable:
            raise ServiceUnavailable(unavailable[0], code="ALERTING_BACKEND_UNAVAILABLE")
        applied = [tenant for tenant, status, _, _ in outcomes if status == "applied"]
        refused = [(tenant, error) for tenant, status, error, _ in outcomes if status == "rejected"]
        return applied, refused

    applied, refused = run_async(settings, work())
    lines = [f"{tenant}: refused by {backend.name}: {error}" for tenant, error in refused]
    lines.append(f"applied the configurations of {len(applied)} tenant(s) to {backend.name}")
    document: dict[str, Any] = {"backend": backend.name, "applied": applied}
    if refused:
        document["refused"] = [{"tenant": tenant, "error": error} for tenant, error in refused]
    echo_result(as_json, document, "\n".join(lines))
    if refused:
        raise typer.Exit(EXIT_REFUSED)


@app.command("check")
def check(as_json: JsonOption = False) -> None:
    """Check every stored configuration against today's rules and limits (configurations
    stored before a rule existed are not rewritten): one line per configuration refused,
    exit 1 when there is any."""
    settings, backend = _backend()
    policy = policy_from_settings(settings)

    async def work(session: AsyncSession) -> list[service.Finding]:
        try:
            return await service.check_stored(session, backend, policy)
        finally:
            await backend.aclose()

    findings = run_in_transaction(settings, work)
    lines = [f"{item.tenant}: {item.field}: {item.code}: {item.message}" for item in findings]
    echo_result(
        as_json,
        {
            "findings": [
                {
                    "tenant": item.tenant,
                    "field": item.field,
                    "code": item.code,
                    "message": item.message,
                }
                for item in findings
            ]
        },
        "\n".join(lines) or "every stored configuration passes the current rules",
    )
    if findings:
        raise typer.Exit(EXIT_REFUSED)
