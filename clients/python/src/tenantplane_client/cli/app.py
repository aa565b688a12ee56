"""tpctl: the tenantplane API from a shell. Exit codes: docs/clients.md#exit-codes."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
import yaml

from tenantplane_client import __version__
from tenantplane_client.cli import profiles
from tenantplane_client.cli.accounts import (
    apikeys_app,
    invoices_app,
    members_app,
    plans_app,
    tenant_app,
    versions_app,
)
from tenantplane_client.cli.alerting import alerting_app
from tenantplane_client.cli.clusters import clusters_app, kubeconfig_command, token_command
from tenantplane_client.cli.common import State, detailed, group, handled
from tenantplane_client.cli.events import events_app
from tenantplane_client.cli.output import Output, say
from tenantplane_client.cli.secrets import secrets_app
from tenantplane_client.cli.webhooks import webhooks_app


def _version(value: bool) -> None:
    if value:
        print(f"tpctl {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="tpctl",
    help="The tenantplane API from a shell: clusters, secrets, alerting, members, keys, billing, "
    "events, webhooks.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
config_app = group("Profiles: server URL, tenant and credential.")
for sub, name in (
    (config_app, "config"),
    (clusters_app, "clusters"),
    (secrets_app, "secrets"),
    (alerting_app, "alerting"),
    (members_app, "members"),
    (apikeys_app, "apikeys"),
    (invoices_app, "invoices"),
    (tenant_app, "tenant"),
    (versions_app, "versions"),
    (plans_app, "plans"),
    (events_app, "events"),
    (webhooks_app, "webhooks"),
):
    app.add_typer(sub, name=name)
app.command("kubeconfig")(kubeconfig_command)
app.command("token")(token_command)


@app.callback()
def root(
    profile: Annotated[
        str | None, typer.Option("--profile", "-p", help="Profile to use (else the current).")
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    State.profile = profile


# --- config ---------------------------------------------------------------------------


@config_app.command("set-profile")
@handled
def config_set_profile(
    name: str,
    url: Annotated[
        str | None, typer.Option(help="Server origin, e.g. http://127.0.0.1:8080")
    ] = None,
    tenant: Annotated[str | None, typer.Option(help="Tenant name")] = None,
    api_key: Annotated[
        str | None, typer.Option(help="API key (svc_…); visible to `ps`: prefer --api-key-stdin")
    ] = None,
    api_key_stdin: Annotated[
        bool, typer.Option("--api-key-stdin", help="Read the API key from standard input")
    ] = False,
    token: Annotated[str | None, typer.Option(help="OIDC token")] = None,
    use: Annotated[bool, typer.Option(help="Make it the current profile")] = False,
) -> None:
    """Create or change a profile (only the options given change)."""
    if api_key_stdin:
        if api_key is not None:
            raise typer.BadParameter("give --api-key or --api-key-stdin, not both")
        api_key = sys.stdin.read().strip()
        if not api_key:
            raise profiles.ConfigError("--api-key-stdin: standard input held no key")
    config = profiles.load()
    profile = config.profiles.setdefault(name, profiles.Profile())
    for field, value in (("url", url), ("tenant", tenant), ("api_key", api_key), ("token", token)):
        if value is not None:
            setattr(profile, field, value)
    if use or len(config.profiles) == 1:
        config.current = name
    path = profiles.save(config)
    say(f"Profile {name} saved in {path}")


@config_app.command("use")
@handled
def config_use(name: str) -> None:
    """Make NAME the current profile."""
    config = profiles.load()
    if name not in config.profiles:
        raise profiles.ConfigError(
            f"no profile {name!r}: create it with `tpctl config set-profile`"
        )
    config.current = name
    profiles.save(config)
    say(f"Using profile {name}")


@config_app.command("view")
@handled
def config_view(
    output: Annotated[
        Output | None,
        typer.Option(
            "--output", "-o", help="yaml (default on a terminal) | json (piped); table prints YAML"
        ),
    ] = None,
    show_secrets: Annotated[bool, typer.Option(help="Print credentials in clear")] = False,
) -> None:
    """Show the profiles (credentials masked) and the one in use with the environment applied."""
    config = profiles.load()
    name, effective = profiles.resolve(State.profile)

    def shown(profile: profiles.Profile) -> dict[str, Any]:
        values = {k: v for k, v in vars(profile).items() if v is not None}
        if not show_secrets:
            values = {k: ("****" if k in ("api_key", "token") else v) for k, v in values.items()}
        return values

    data = {
        "path": str(profiles.config_path()),
        "current": name,
        "effective": shown(effective),
        "profiles": {key: shown(value) for key, value in sorted(config.profiles.items())},
    }
    if (detailed(output)) is Output.json:
        print(json.dumps(data, indent=2))
    else:
        print(yaml.safe_dump(data, sort_keys=False), end="")


def main() -> None:
    app()
