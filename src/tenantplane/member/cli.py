"""`tenantplane member add`: an operator adds a tenant's member, for instance an admin for a
tenant that lost its last one."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.cli_support import checked, load_settings, run_in_transaction
from tenantplane.event.log import append, operator_event
from tenantplane.member import service
from tenantplane.member.models import Role
from tenantplane.member.schemas import Email, MemberRead
from tenantplane.tenant.service import get_by_name

app = typer.Typer(help="Add tenants' members.", no_args_is_help=True)


@app.command("add")
def add(
    tenant: str,
    email: str,
    role: Annotated[Role, typer.Option(help="admin (read-write) or readonly.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Add EMAIL as a member of TENANT; they sign in through OIDC with that email."""
    address: str = checked(Email, email, "EMAIL")

    async def work(session: AsyncSession) -> MemberRead:
        found = await get_by_name(session, tenant)
        added = await service.add(session, found.id, address, role, None)
        # Audited as the API's addition is (actor: the operator), last in the transaction.
        email = added.member.email
        await append(session, found.id, operator_event("member.create", "member", email))
        return MemberRead.of(added.member)

    member = run_in_transaction(load_settings(), work)
    if as_json:
        document = {"tenant": tenant, "member": member.model_dump(mode="json", by_alias=True)}
        typer.echo(json.dumps(document))
        return
    typer.echo(f"{member.email} is now a member of tenant {tenant} ({member.role.value})")
