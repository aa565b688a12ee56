"""tpctl clusters, kubeconfig and token."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from tenantplane_client import models as m
from tenantplane_client import waiting
from tenantplane_client._sync import Tenantplane
from tenantplane_client.cli import kubeconfig, profiles, token_cache
from tenantplane_client.cli.common import (
    OutputOption,
    State,
    client,
    group,
    handled,
)
from tenantplane_client.cli.output import labelled, render, say, stderr

clusters_app = group("Managed Kubernetes clusters.")


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
        version = waiting.condition(cluster, waiting.VERSION_UP_TO_DATE)
        if version is not None and version.get("status") != "True":
            line += f", version {version.get('reason')}: {version.get('message')}"
        say(line)

    return report


def _wait(api: Tenantplane, name: str, timeout: float, interval: float) -> m.ClusterRead:
    with stderr.status(Text(f"Waiting for {name} to be Running…")):
        return api.clusters.wait_for(
            name, timeout=timeout, interval=interval, on_progress=_progress_printer()
        )


WaitOption = Annotated[
    bool,
    typer.Option("--wait", help="Wait until the cluster is Running (and runs its version)."),
]
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
    cpu: Annotated[str | None, typer.Option(help="CPU quantity, e.g. 2 (else the default)")] = None,
    memory: Annotated[
        str | None, typer.Option(help="Memory quantity, e.g. 4Gi (else the default)")
    ] = None,
    storage: Annotated[
        str | None, typer.Option(help="Storage quantity, e.g. 20Gi (else the default)")
    ] = None,
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
            stderr.print(labelled("Warning:", "yellow", f"{warning.code}: {warning.message}"))
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
        if not wait:
            render(api.clusters.upgrade(name, version), output, CLUSTER_COLUMNS)
            return
        with stderr.status(Text(f"Waiting for {name} to run {version}…")):
            cluster = api.clusters.upgrade(
                name,
                version,
                wait=True,
                timeout=timeout,
                interval=interval,
                on_progress=_progress_printer(),
            )
        render(cluster, output, CLUSTER_COLUMNS)


@clusters_app.command("update")
@handled
def clusters_update(
    name: str,
    version: Annotated[
        str | None, typer.Option(help="Kubernetes <major>.<minor> (one minor up at a time)")
    ] = None,
    cpu: Annotated[str | None, typer.Option(help="New CPU quantity (a resize)")] = None,
    memory: Annotated[str | None, typer.Option(help="New memory quantity (a resize)")] = None,
    storage: Annotated[str | None, typer.Option(help="New storage quantity (a resize)")] = None,
    output: OutputOption = None,
) -> None:
    """Change a cluster's version (an upgrade) or its resources (a resize, applied online;
    resources not given keep their values). High availability is set at creation only."""
    body: dict[str, Any] = {}
    if version:
        body["version"] = version
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("storage", storage)) if v}
    if resources:
        body["resources"] = resources
    if not body:
        raise typer.BadParameter("give --version or at least one of --cpu, --memory, --storage")
    with client() as api:
        render(api.clusters.update(name, lambda _: body), output, CLUSTER_COLUMNS)


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


@handled
def kubeconfig_command(
    name: str,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file", help="This file instead of $KUBECONFIG's first, else ~/.kube/config"
        ),
    ] = None,
    context: Annotated[
        str | None, typer.Option(help="Context name (default tenant-cluster)")
    ] = None,
    set_current: Annotated[bool, typer.Option(help="Make it the current context")] = True,
) -> None:
    """Add a context for cluster NAME to a kubeconfig, authenticated by `tpctl token`."""
    profile_name, profile = profiles.resolve(State.profile)
    with client() as api:
        details = api.clusters.connection_details(name)
        tenant = api.tenant
    context_name = context or f"{tenant}-{name}"
    path = file or kubeconfig.default_path()
    command = shutil.which("tpctl") or "tpctl"
    new = kubeconfig.entries(
        context=context_name,
        endpoint=details.endpoint,
        certificate_authority=details.certificate_authority,
        profile=profile_name,
        command=command,
        tenant=tenant,
        cluster=name,
    )
    merged = kubeconfig.merge(path, new, set_current=set_current)
    if merged is kubeconfig.Merged.written:
        say(f"Context {context_name} written to {path}")
    elif merged is kubeconfig.Merged.made_current:
        say(f"Context {context_name} already in {path}; made the current context")
    else:
        say(f"Context {context_name} already in {path}; unchanged")
    # kubectl runs `tpctl token` with this profile, maybe without this shell's environment.
    if profiles.save_if_absent(profile_name, profile):
        say(
            f"Profile {profile_name} saved in {profiles.config_path()} from the environment "
            "(kubectl's `tpctl token` reads it)"
        )


@handled
def token_command(
    cluster: Annotated[
        str | None, typer.Option(help="The cluster (as `tpctl kubeconfig` writes it)")
    ] = None,
    tenant: Annotated[str | None, typer.Option(help="Its tenant (default: the profile's)")] = None,
) -> None:
    """Print an ExecCredential (client.authentication.k8s.io/v1) for kubectl: a short-lived
    token for the cluster, kept until shortly before it expires."""
    profile_name, profile = profiles.resolve(State.profile)
    if not cluster:
        raise profiles.ConfigError(
            "tpctl token needs --cluster: write the kubeconfig entry again with "
            "`tpctl kubeconfig CLUSTER`"
        )
    if not profile.credential:
        raise profiles.ConfigError(profiles.no_credential(profile_name))
    if tenant:
        profile.tenant = tenant
    url, tenant_name, credential = profile.require()
    cached_at = token_cache.cache_file(url, tenant_name, cluster, credential)
    cached = token_cache.load(cached_at)
    if cached is None or not cached.fresh(token_cache.now()):
        obtained_at = token_cache.now()
        with client(profile) as api:
            issued = api.clusters.credentials(cluster)
        cached = token_cache.CachedToken(
            issued.token, datetime.fromisoformat(issued.expires_at), obtained_at
        )
        token_cache.store(cached_at, cached)
    print(json.dumps(kubeconfig.exec_credential(cached.token, cached.expires_at)))
