"""tpctl: the tenantplane API from a shell. Exit codes: docs/clients.md#exit-codes."""

from __future__ import annotations

import enum
import functools
import json
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
import yaml

from tenantplane_client import __version__
from tenantplane_client import models as m
from tenantplane_client._sync import Tenantplane
from tenantplane_client.cli import kubeconfig, profiles
from tenantplane_client.cli.output import Output, render, stderr
from tenantplane_client.errors import ApiError, ConnectionFailed, WaitTimeout
from tenantplane_client.retry import RetryPolicy

P = ParamSpec("P")
R = TypeVar("R")


class Exit(enum.IntEnum):
    """What scripts branch on (typer/click use 2 for usage errors)."""

    ok = 0
    error = 1
    usage = 2
    config = 3
    not_found = 4
    conflict = 5
    denied = 6
    invalid = 7
    unavailable = 8
    timeout = 9


def exit_code_of(error: ApiError) -> Exit:
    if error.status == 404:
        return Exit.not_found
    if error.status in (409, 412, 422):
        return Exit.conflict
    if error.status in (401, 403):
        return Exit.denied
    if error.status in (400, 413, 415):
        return Exit.invalid
    if error.status == 429 or error.status >= 500:
        return Exit.unavailable
    return Exit.error


def handled(command: Callable[P, R]) -> Callable[P, R]:
    """Print the API's errors (code and field included) and exit with their code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except ApiError as error:
            stderr.print(f"[red]Error:[/] {error}", markup=True, highlight=False)
            raise typer.Exit(exit_code_of(error)) from None
        except profiles.ConfigError as error:
            stderr.print(f"[red]Configuration:[/] {error}", highlight=False)
            raise typer.Exit(Exit.config) from None
        except kubeconfig.KubeconfigConflict as error:
            stderr.print(f"[red]Kubeconfig:[/] {error}", highlight=False)
            raise typer.Exit(Exit.conflict) from None
        except ConnectionFailed as error:
            stderr.print(f"[red]Unreachable:[/] {error}", highlight=False)
            raise typer.Exit(Exit.unavailable) from None
        except WaitTimeout as error:
            stderr.print(f"[red]Timeout:[/] {error}", highlight=False)
            raise typer.Exit(Exit.timeout) from None

    return run


def _version(value: bool) -> None:
    if value:
        print(f"tpctl {__version__}")
        raise typer.Exit()


app = typer.Typer(
    name="tpctl",
    help="The tenantplane API from a shell: clusters, secrets, alerting, members, keys, billing.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Profiles: server URL, tenant and credential.", no_args_is_help=True)
clusters_app = typer.Typer(help="Managed Kubernetes clusters.", no_args_is_help=True)
secrets_app = typer.Typer(help="Vault-backed secrets and their sync targets.", no_args_is_help=True)
alerting_app = typer.Typer(help="The alerting (Alertmanager) configuration.", no_args_is_help=True)
members_app = typer.Typer(help="Tenant members (email and role).", no_args_is_help=True)
apikeys_app = typer.Typer(help="API keys.", no_args_is_help=True)
invoices_app = typer.Typer(
    help="Invoices, receipt links and the payment portal.", no_args_is_help=True
)
tenant_app = typer.Typer(help="The tenant record.", no_args_is_help=True)
versions_app = typer.Typer(help="Kubernetes versions clusters may run.", no_args_is_help=True)
plans_app = typer.Typer(help="The plan catalogue.", no_args_is_help=True)
for group, name in (
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
):
    app.add_typer(group, name=name)


class State:
    profile: str | None = None


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


OutputOption = Annotated[
    Output | None,
    typer.Option("--output", "-o", help="table (default on a terminal) | json (piped) | yaml"),
]
FileOption = Annotated[
    Path, typer.Option("--file", "-f", help="YAML or JSON file ('-' for standard input).")
]


@contextmanager
def client() -> Iterator[Tenantplane]:
    _, profile = profiles.resolve(State.profile)
    url, tenant, credential = profile.require()
    retry = RetryPolicy(base_delay=profiles.retry_base_seconds())
    with Tenantplane(
        url, tenant, credential, retry=retry, user_agent=f"tpctl/{__version__}"
    ) as api:
        yield api


def read_text(path: Path) -> str:
    try:
        return sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as exc:
        raise profiles.ConfigError(f"cannot read {path}: {exc.strerror}") from exc


def read_document(path: Path) -> Any:
    text = read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise profiles.ConfigError(f"{path} is not valid YAML or JSON: {exc}") from exc


def detailed(output: Output | None) -> Output:
    """Nested documents (the alerting sections): YAML on a terminal rather than a table."""
    if output is not None:
        return output
    return Output.yaml if sys.stdout.isatty() else Output.json


# --- config ---------------------------------------------------------------------------


@config_app.command("set-profile")
@handled
def config_set_profile(
    name: str,
    url: Annotated[
        str | None, typer.Option(help="Server origin, e.g. http://127.0.0.1:8080")
    ] = None,
    tenant: Annotated[str | None, typer.Option(help="Tenant name")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (svc_…)")] = None,
    token: Annotated[str | None, typer.Option(help="OIDC token")] = None,
    use: Annotated[bool, typer.Option(help="Make it the current profile")] = False,
) -> None:
    """Create or change a profile (only the options given change)."""
    config = profiles.load()
    profile = config.profiles.setdefault(name, profiles.Profile())
    for field, value in (("url", url), ("tenant", tenant), ("api_key", api_key), ("token", token)):
        if value is not None:
            setattr(profile, field, value)
    if use or len(config.profiles) == 1:
        config.current = name
    path = profiles.save(config)
    stderr.print(f"Profile {name} saved in {path}", highlight=False)


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
    stderr.print(f"Using profile {name}", highlight=False)


@config_app.command("view")
@handled
def config_view(
    output: OutputOption = None,
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


# --- clusters -------------------------------------------------------------------------

CLUSTER_COLUMNS = (
    "name",
    "version",
    "highAvailability",
    "status.phase",
    "status.haPhase",
    "status.kubernetesVersion",
    "status.endpoint",
)


def _progress_printer() -> Callable[[m.ClusterRead], None]:
    def report(cluster: m.ClusterRead) -> None:
        status = cluster.status
        line = f"{cluster.name}: phase {status.phase or '?'}"
        if cluster.high_availability:
            line += (
                f", HA {status.ha_phase or 'pending'}: control plane "
                f"{status.ha_replicas_ready or 0}/{status.ha_replicas_desired or 3}, etcd "
                f"{status.ha_etcd_replicas_ready or 0}/{status.ha_etcd_replicas_desired or 3}"
            )
        stderr.print(line, highlight=False)

    return report


def _wait(api: Tenantplane, name: str, timeout: float, interval: float) -> m.ClusterRead:
    with stderr.status(f"Waiting for {name} to be Running…"):
        return api.clusters.wait_for(
            name, timeout=timeout, interval=interval, on_progress=_progress_printer()
        )


WaitOption = Annotated[bool, typer.Option("--wait", help="Wait until the cluster is Running.")]
TimeoutOption = Annotated[float, typer.Option(help="Seconds --wait waits at most.")]
IntervalOption = Annotated[float, typer.Option(help="Seconds between polls while waiting.")]


@clusters_app.command("list")
@handled
def clusters_list(output: OutputOption = None) -> None:
    """List the tenant's clusters."""
    with client() as api:
        render(api.clusters.list(), output, CLUSTER_COLUMNS)


@clusters_app.command("get")
@handled
def clusters_get(name: str, output: OutputOption = None) -> None:
    """Show one cluster."""
    with client() as api:
        render(api.clusters.get(name), output, CLUSTER_COLUMNS)


@clusters_app.command("create")
@handled
def clusters_create(
    name: str,
    version: Annotated[str | None, typer.Option(help="Kubernetes <major>.<minor>")] = None,
    ha: Annotated[bool, typer.Option("--ha", help="Highly available control plane")] = False,
    cpu: Annotated[str | None, typer.Option()] = None,
    memory: Annotated[str | None, typer.Option()] = None,
    storage: Annotated[str | None, typer.Option()] = None,
    wait: WaitOption = False,
    timeout: TimeoutOption = 900.0,
    interval: IntervalOption = 2.0,
    output: OutputOption = None,
) -> None:
    """Create a cluster (provisioned asynchronously; --wait follows it until Running)."""
    body: dict[str, Any] = {"name": name, "highAvailability": ha}
    if version:
        body["version"] = version
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("storage", storage)) if v}
    if resources:
        body["resources"] = resources
    with client() as api:
        cluster = api.clusters.create(body)
        for warning in cluster.warnings or []:
            stderr.print(f"[yellow]Warning:[/] {warning.code}: {warning.message}", highlight=False)
        if wait:
            cluster = _wait(api, name, timeout, interval)
        render(cluster, output, CLUSTER_COLUMNS)


@clusters_app.command("upgrade")
@handled
def clusters_upgrade(
    name: str,
    version: Annotated[str, typer.Option(help="Kubernetes <major>.<minor> to move to")],
    wait: WaitOption = False,
    timeout: TimeoutOption = 900.0,
    interval: IntervalOption = 2.0,
    output: OutputOption = None,
) -> None:
    """Upgrade a cluster's Kubernetes version."""
    with client() as api:
        cluster = api.clusters.upgrade(name, version)
        if wait:
            cluster = _wait(api, name, timeout, interval)
        render(cluster, output, CLUSTER_COLUMNS)


@clusters_app.command("update")
@handled
def clusters_update(
    name: str,
    version: Annotated[str, typer.Option(help="Kubernetes <major>.<minor>")],
    output: OutputOption = None,
) -> None:
    """Change a cluster (its version: the only field that may change)."""
    with client() as api:
        render(api.clusters.upgrade(name, version), output, CLUSTER_COLUMNS)


@clusters_app.command("delete")
@handled
def clusters_delete(name: str, output: OutputOption = None) -> None:
    """Delete a cluster (torn down asynchronously)."""
    with client() as api:
        render(api.clusters.delete(name), output, CLUSTER_COLUMNS)


@clusters_app.command("connection-details")
@handled
def clusters_connection_details(name: str, output: OutputOption = None) -> None:
    """Show a cluster's endpoint and CA certificate."""
    with client() as api:
        render(api.clusters.connection_details(name), output)


# --- kubeconfig and token ---------------------------------------------------------------


@app.command("kubeconfig")
@handled
def kubeconfig_command(
    name: str,
    file: Annotated[
        Path | None, typer.Option("--file", help="Write here instead of ~/.kube/config")
    ] = None,
    context: Annotated[
        str | None, typer.Option(help="Context name (default tenant-cluster)")
    ] = None,
    set_current: Annotated[bool, typer.Option(help="Make it the current context")] = True,
) -> None:
    """Add a context for cluster NAME to a kubeconfig, authenticated by `tpctl token`."""
    profile_name, _ = profiles.resolve(State.profile)
    with client() as api:
        details = api.clusters.connection_details(name)
        context_name = context or f"{api.tenant}-{name}"
    path = file or kubeconfig.default_path()
    command = shutil.which("tpctl") or "tpctl"
    new = kubeconfig.entries(
        context=context_name,
        endpoint=details.endpoint,
        certificate_authority=details.certificate_authority,
        profile=profile_name,
        command=command,
    )
    kubeconfig.merge(path, new, set_current=set_current)
    stderr.print(f"Context {context_name} written to {path}", highlight=False)


@app.command("token")
@handled
def token_command() -> None:
    """Print an ExecCredential (client.authentication.k8s.io/v1) for kubectl."""
    _, profile = profiles.resolve(State.profile)
    credential = profile.credential
    if not credential:
        raise profiles.ConfigError(
            f"no credential: set {profiles.ENV_API_KEY} or {profiles.ENV_TOKEN}, or a profile's"
        )
    print(json.dumps(kubeconfig.exec_credential(credential)))


# --- secrets ----------------------------------------------------------------------------

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
    stderr.print(f"Secret {name} deleted", highlight=False)


# --- alerting ---------------------------------------------------------------------------

receivers_app = typer.Typer(help="Receivers.", no_args_is_help=True)
routes_app = typer.Typer(help="Child routes of the root route.", no_args_is_help=True)
templates_app = typer.Typer(help="Template files.", no_args_is_help=True)
intervals_app = typer.Typer(help="Time intervals.", no_args_is_help=True)
global_app = typer.Typer(help="The global section.", no_args_is_help=True)
alerting_app.add_typer(receivers_app, name="receivers")
alerting_app.add_typer(routes_app, name="routes")
alerting_app.add_typer(templates_app, name="templates")
alerting_app.add_typer(intervals_app, name="time-intervals")
alerting_app.add_typer(global_app, name="global")


@alerting_app.command("config")
@handled
def alerting_config(output: OutputOption = None) -> None:
    """Print the whole configuration wrapper (global, receivers, route, templates, …)."""
    with client() as api:
        render(api.alerting.get_config(), detailed(output))


@alerting_app.command("apply")
@handled
def alerting_apply(file: FileOption, output: OutputOption = None) -> None:
    """Replace the whole configuration with a file's."""
    with client() as api:
        render(api.alerting.put_config(read_document(file)), detailed(output))


@alerting_app.command("reset")
@handled
def alerting_reset() -> None:
    """Remove the tenant's configuration (back to the default)."""
    with client() as api:
        api.alerting.reset_config()
    stderr.print("Alerting configuration reset")


@receivers_app.command("list")
@handled
def receivers_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_receivers(), output, ("name",))


@receivers_app.command("get")
@handled
def receivers_get(name: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_receiver(name), detailed(output))


@receivers_app.command("put")
@handled
def receivers_put(name: str, file: FileOption, output: OutputOption = None) -> None:
    """Create or replace a receiver from a file."""
    with client() as api:
        render(api.alerting.put_receiver(name, read_document(file)), detailed(output))


@receivers_app.command("delete")
@handled
def receivers_delete(name: str) -> None:
    with client() as api:
        api.alerting.delete_receiver(name)


@routes_app.command("list")
@handled
def routes_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_routes(), output, ("receiver", "matchers", "continue"))


@routes_app.command("get")
@handled
def routes_get(index: int, output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_route(index), detailed(output))


@routes_app.command("put")
@handled
def routes_put(index: int, file: FileOption, output: OutputOption = None) -> None:
    """Insert or replace the child route at INDEX (the route count appends)."""
    with client() as api:
        render(api.alerting.put_route(index, read_document(file)), detailed(output))


@routes_app.command("delete")
@handled
def routes_delete(index: int) -> None:
    with client() as api:
        api.alerting.delete_route(index)


@templates_app.command("list")
@handled
def templates_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_templates(), output, ("filename",))


@templates_app.command("get")
@handled
def templates_get(filename: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_template(filename), detailed(output))


@templates_app.command("put")
@handled
def templates_put(filename: str, file: FileOption, output: OutputOption = None) -> None:
    """Create or replace a template file with a local file's contents."""
    contents = read_text(file)
    with client() as api:
        render(api.alerting.put_template(filename, contents), detailed(output))


@templates_app.command("delete")
@handled
def templates_delete(filename: str) -> None:
    with client() as api:
        api.alerting.delete_template(filename)


@intervals_app.command("list")
@handled
def intervals_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_time_intervals(), output, ("name",))


@intervals_app.command("get")
@handled
def intervals_get(name: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_time_interval(name), detailed(output))


@intervals_app.command("put")
@handled
def intervals_put(name: str, file: FileOption, output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.put_time_interval(name, read_document(file)), detailed(output))


@intervals_app.command("delete")
@handled
def intervals_delete(name: str) -> None:
    with client() as api:
        api.alerting.delete_time_interval(name)


@global_app.command("get")
@handled
def global_get(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_global(), detailed(output))


@global_app.command("put")
@handled
def global_put(file: FileOption, output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.put_global(read_document(file)), detailed(output))


# --- members, API keys ------------------------------------------------------------------

RoleOption = Annotated[m.Role, typer.Option(help="admin or readonly")]


@members_app.command("list")
@handled
def members_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.members.list(), output, ("email", "role"))


@members_app.command("get")
@handled
def members_get(email: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.members.get(email), output, ("email", "role"))


@members_app.command("create")
@handled
def members_create(email: str, role: RoleOption, output: OutputOption = None) -> None:
    """Add a member (they sign in through OIDC)."""
    with client() as api:
        render(api.members.add(email, role), output, ("email", "role"))


@members_app.command("update")
@handled
def members_update(email: str, role: RoleOption, output: OutputOption = None) -> None:
    with client() as api:
        render(api.members.update(email, role), output, ("email", "role"))


@members_app.command("delete")
@handled
def members_delete(email: str) -> None:
    with client() as api:
        api.members.remove(email)


APIKEY_COLUMNS = ("id", "displayName", "role", "createdBy", "expiresAt", "lastUsedAt")


@apikeys_app.command("list")
@handled
def apikeys_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.apikeys.list(), output, APIKEY_COLUMNS)


@apikeys_app.command("get")
@handled
def apikeys_get(key_id: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.apikeys.get(key_id), output, APIKEY_COLUMNS)


@apikeys_app.command("create")
@handled
def apikeys_create(
    name: Annotated[str, typer.Option("--name", help="Display name")],
    role: RoleOption,
    expires_at: Annotated[str | None, typer.Option(help="RFC 3339, with an offset")] = None,
    output: OutputOption = None,
) -> None:
    """Create a key; its raw value (svc_…) is printed this once."""
    body: dict[str, Any] = {"displayName": name, "role": role}
    if expires_at:
        body["expiresAt"] = expires_at
    with client() as api:
        render(api.apikeys.create(body), output, ("id", "displayName", "role", "key"))


@apikeys_app.command("delete")
@handled
def apikeys_delete(key_id: str) -> None:
    """Revoke a key."""
    with client() as api:
        api.apikeys.revoke(key_id)


# --- billing, tenant, catalogues ----------------------------------------------------------

INVOICE_COLUMNS = (
    "name",
    "status.phase",
    "billingPeriod.start",
    "billingPeriod.end",
    "status.currency",
    "status.total",
)


@invoices_app.command("list")
@handled
def invoices_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.invoices.list(), output, INVOICE_COLUMNS)


@invoices_app.command("get")
@handled
def invoices_get(name: str, output: OutputOption = None) -> None:
    with client() as api:
        render(api.invoices.get(name), output, INVOICE_COLUMNS)


@invoices_app.command("receipt")
@handled
def invoices_receipt(name: str, output: OutputOption = None) -> None:
    """Print a fresh, short-lived receipt link (open it now; it is not saved)."""
    with client() as api:
        render(api.invoices.receipt(name), output, ("url",))


@invoices_app.command("portal")
@handled
def invoices_portal(output: OutputOption = None) -> None:
    """Print fresh, short-lived payment-portal links (open them now; they are not saved)."""
    with client() as api:
        render(api.billing.portal_session(), output, ("overviewURL", "updatePaymentMethodURL"))


@tenant_app.command("get")
@handled
def tenant_get(output: OutputOption = None) -> None:
    with client() as api:
        render(api.get_tenant(), output)


@versions_app.command("list")
@handled
def versions_list(output: OutputOption = None) -> None:
    with client() as api:
        render(
            api.versions().items, output, ("version", "kubernetesVersion", "default", "retiring")
        )


@plans_app.command("list")
@handled
def plans_list(output: OutputOption = None) -> None:
    with client() as api:
        render(
            api.plans(),
            output,
            ("name", "limits.clusters", "prices.currency", "prices.platformFee"),
        )


def main() -> None:
    app()
