"""`tenantplane apikey create`: an operator issues a tenant's API key, for instance to give
back admin access to a tenant that lost its last admin key."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.apikey import service
from tenantplane.apikey.schemas import ApiKeyCreated
from tenantplane.cli_support import checked, load_settings, run_in_transaction
from tenantplane.event.log import append, operator_event
from tenantplane.http.text import DisplayText
from tenantplane.member.models import Role
from tenantplane.tenant.service import get_by_name

app = typer.Typer(help="Issue tenants' API keys.", no_args_is_help=True)

DEFAULT_NAME = "operator"
# createdBy of keys an operator issues (the bootstrap key without --admin-email too).
OPERATOR_IDENTITY = "platform-operator"


@app.command("create")
def create(
    tenant: str,
    role: Annotated[Role, typer.Option(help="admin (read-write) or readonly.")],
    name: Annotated[str, typer.Option(help="The key's displayName.")] = DEFAULT_NAME,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Create an API key of TENANT and print the raw key, once (it cannot be read again)."""
    display_name: str = checked(DisplayText, name, "--name")
    settings = load_settings()
    keys = settings.keyring()

    async def work(session: AsyncSession) -> ApiKeyCreated:
        found = await get_by_name(session, tenant)
        issued = await service.issue(
            session,
            keys=keys,
            tenant_id=found.id,
            display_name=display_name,
            role=role,
            created_by=OPERATOR_IDENTITY,
        )
        # Audited as the API's creation is (actor: the operator), last in the transaction.
        created = operator_event("apikey.create", "apikey", issued.key.id)
        await append(session, found.id, created)
        return ApiKeyCreated(
            id=issued.key.id,
            display_name=issued.key.display_name,
            role=issued.key.role,
            created_at=issued.key.created_at,
            created_by=issued.key.created_by,
            key=issued.raw_key,
        )

    created = run_in_transaction(settings, work)
    if as_json:
        api_key = created.model_dump(mode="json", by_alias=True, exclude_none=True)
        typer.echo(json.dumps({"tenant": tenant, "apiKey": api_key}))
        return
    typer.echo(f"{created.role.value} API key {created.id} of tenant {tenant} (shown once):")
    typer.echo(created.key)
