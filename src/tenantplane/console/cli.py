"""`tenantplane console-login TENANT EMAIL`: a one-time sign-in link for a member (the way
into the console on a deployment without an OIDC issuer, the embedded default's case)."""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import urlencode

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cli_support import (
    EXIT_REFUSED,
    CliError,
    checked,
    load_settings,
    run_in_transaction,
)
from tenantplane.console import service
from tenantplane.db.engine import Database
from tenantplane.member.repository import find_membership
from tenantplane.member.schemas import Email


def console_login(
    tenant: str,
    email: str,
    url: Annotated[
        str | None,
        typer.Option(
            help="How the browser reaches the service (default: PUBLIC_URL, else http://127.0.0.1:8080)"
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Print a link that signs EMAIL in to TENANT's console once (valid for
    CONSOLE_SIGN_IN_LINK_MINUTES)."""
    address: str = checked(Email, email, "EMAIL")
    settings = load_settings()
    base = (url or settings.public_url or "http://127.0.0.1:8080").rstrip("/")

    async def work(session: AsyncSession) -> str:
        database = Database.from_settings(settings)
        try:
            membership = await find_membership(database.reads, tenant, address)
        finally:
            await database.dispose()
        if membership is None:
            raise CliError(
                "NOT_A_MEMBER",
                f"{address} is not a member of tenant {tenant}: add them first "
                f"(tenantplane member add {tenant} {address} --role admin)",
                EXIT_REFUSED,
            )
        return await service.create_link(session, settings, tenant, address)

    token = run_in_transaction(settings, work)
    link = f"{base}/console/sign-in/link?{urlencode({'token': token})}"
    if as_json:
        minutes = settings.console_sign_in_link_minutes
        typer.echo(
            json.dumps(
                {"tenant": tenant, "email": address, "url": link, "expiresInMinutes": minutes}
            )
        )
        return
    typer.echo(link)
