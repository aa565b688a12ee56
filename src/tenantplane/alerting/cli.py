"""`tenantplane alerting …`: per-tenant backend credentials and re-applying configurations."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.alerting import credentials, service
from tenantplane.alerting.models import CredentialsAuth
from tenantplane.cli_support import run_in_transaction
from tenantplane.config import Settings
from tenantplane.providers.alerting.factory import backend_from_settings

app = typer.Typer(help="Alerting backends: tenant credentials and re-applying configurations.")


def _read_secret(auth: CredentialsAuth, from_stdin: bool) -> str | None:
    if auth is CredentialsAuth.none:
        return None
    label = "password" if auth is CredentialsAuth.basic else "token"
    if from_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    secret: str = typer.prompt(label, hide_input=True)
    return secret


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
) -> None:
    """Store how the backend reaches TENANT (the secret is read from stdin or a prompt)."""
    settings = Settings()
    secret = _read_secret(auth, secret_stdin)

    async def work(session: AsyncSession) -> credentials.CredentialsInfo:
        return await credentials.set_credentials(
            session,
            tenant_name=tenant,
            org_id=org_id or tenant,
            auth=auth,
            username=username,
            secret=secret,
            secret_key=settings.api_key_secret(),
        )

    info = run_in_transaction(settings, work)
    typer.echo(f"credentials of tenant {info.tenant} set (org id {info.org_id}, auth {info.auth})")


@app.command("clear-credentials")
def clear_credentials(tenant: str) -> None:
    """Forget TENANT's credentials (its alerting API answers 503 until they are set again)."""

    async def work(session: AsyncSession) -> bool:
        return await credentials.clear_credentials(session, tenant)

    removed = run_in_transaction(Settings(), work)
    typer.echo(f"credentials of tenant {tenant} {'removed' if removed else 'were not set'}")


@app.command("show-credentials")
def show_credentials(tenant: str) -> None:
    """Print TENANT's credentials as JSON, without the secret (null when unset)."""

    async def work(session: AsyncSession) -> credentials.CredentialsInfo | None:
        return await credentials.describe_credentials(session, tenant)

    info = run_in_transaction(Settings(), work)
    if info is None:
        typer.echo("null")
        return
    typer.echo(
        json.dumps(
            {
                "tenant": info.tenant,
                "orgId": info.org_id,
                "auth": info.auth,
                "username": info.username,
                "updatedAt": info.updated_at.isoformat().replace("+00:00", "Z"),
            }
        )
    )


@app.command("sync")
def sync() -> None:
    """Apply every stored configuration to the configured backend again."""
    settings = Settings()
    backend = backend_from_settings(settings)

    async def work(session: AsyncSession) -> list[str]:
        return await service.apply_stored(session, backend, settings.api_key_secret())

    applied = run_in_transaction(settings, work)
    typer.echo(f"applied the configurations of {len(applied)} tenant(s) to {backend.name}")
