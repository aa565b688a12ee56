"""tpctl secrets."""

from __future__ import annotations

from typing import Annotated

import typer

from tenantplane_client.cli.common import (
    OutputOption,
    client,
    group,
    handled,
)
from tenantplane_client.cli.output import render, say

secrets_app = group("Vault-backed secrets and their sync targets.")


SECRET_COLUMNS = ("name", "secretPath", "status.phase", "sync")
SyncOption = Annotated[
    list[str] | None,
    typer.Option(
        "--sync", help="Target CLUSTER/NAMESPACE[/SECRET_NAME]; repeat for several targets."
    ),
]


def _targets(values: list[str] | None) -> list[dict[str, str]]:
    targets = []
    for value in values or []:
        parts = value.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise typer.BadParameter(f"{value!r}: expected CLUSTER/NAMESPACE[/SECRET_NAME]")
        target = {"cluster": parts[0], "namespace": parts[1]}
        if len(parts) == 3:
            target["secretName"] = parts[2]
        targets.append(target)
    return targets


@secrets_app.command("list")
@handled
def secrets_list(output: OutputOption = None) -> None:
    """List the tenant's secrets (never their values)."""
    with client() as api:
        render(api.secrets.list(), output, SECRET_COLUMNS)


@secrets_app.command("get")
@handled
def secrets_get(name: str, output: OutputOption = None) -> None:
    """Show one secret with its sync status."""
    with client() as api:
        render(api.secrets.get(name), output, SECRET_COLUMNS)


@secrets_app.command("create")
@handled
def secrets_create(
    name: str,
    path: Annotated[str, typer.Option("--path", help="Path of the key in the tenant's vault")],
    sync: SyncOption = None,
    output: OutputOption = None,
) -> None:
    """Create a secret pointing at a vault path."""
    body = {"name": name, "secretPath": path, "sync": _targets(sync)}
    with client() as api:
        render(api.secrets.create(body), output, SECRET_COLUMNS)


@secrets_app.command("update")
@handled
def secrets_update(name: str, sync: SyncOption = None, output: OutputOption = None) -> None:
    """Replace a secret's sync targets (none given: remove them all)."""
    targets = _targets(sync)
    with client() as api:
        render(api.secrets.update(name, lambda _: {"sync": targets}), output, SECRET_COLUMNS)


@secrets_app.command("delete")
@handled
def secrets_delete(name: str) -> None:
    """Delete a secret."""
    with client() as api:
        api.secrets.delete(name)
    say(f"Secret {name} deleted")
