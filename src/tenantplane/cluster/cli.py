"""`tenantplane simulator …`: operator fault injection into simulated clusters."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Literal

import typer

from tenantplane.cli_support import (
    EXIT_USAGE,
    CliError,
    JsonOption,
    echo_result,
    load_settings,
    run_async,
)
from tenantplane.cluster.repository import ClusterRepository
from tenantplane.db.base import rfc3339
from tenantplane.db.clock import clock_of
from tenantplane.db.engine import Database
from tenantplane.providers.orchestrator import Observation
from tenantplane.providers.orchestrator.simulator import (
    SimulatorOrchestrator,
    UnknownSimulatedCluster,
)

simulator_app = typer.Typer(
    help="Inject faults into simulated clusters (TENANTPLANE_ORCHESTRATOR=simulator).",
    no_args_is_help=True,
)

ComponentOption = Annotated[str, typer.Option(help="Which replicas fail: control-plane or etcd.")]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _json_value(value: object) -> object:
    # As the API writes them: RFC 3339 in UTC with Z.
    return rfc3339(value) if isinstance(value, datetime) else value


async def _cluster_uid(database: Database, tenant: str, name: str) -> str:
    async with database.transaction() as session:
        cluster = await ClusterRepository.from_session(session).find(tenant, name)
        if cluster is None:
            raise CliError("NOT_FOUND", f"no cluster {name} in tenant {tenant}")
        return cluster.uid


async def _nudge(database: Database, uid: str) -> None:
    """Ask the cluster reconciler to observe this cluster now (whatever process runs it)."""
    async with database.transaction() as session:
        await ClusterRepository.from_session(session).mark_due(uid, await clock_of(session).now())


def _observation_json(observation: Observation) -> dict[str, object]:
    return {
        "stage": observation.stage,
        "controlPlane": asdict(observation.control_plane),
        "etcd": asdict(observation.etcd),
        "message": observation.message,
    }


def _observation_text(tenant: str, name: str, observation: Observation) -> str:
    # The simulator's message already counts the ready replicas (after what it is doing, if
    # anything): printed as it is, not after a count of our own, which said them twice.
    control_plane, etcd = observation.control_plane, observation.etcd
    detail = observation.message or (
        f"control plane {control_plane.ready}/{control_plane.desired} ready, "
        f"etcd {etcd.ready}/{etcd.desired} ready"
    )
    return f"cluster {name} of tenant {tenant}: stage {observation.stage}, {detail}"


def _run(
    tenant: str,
    name: str,
    action: Literal["fail", "recover", "show"],
    as_json: bool,
    **options: object,
) -> None:
    settings = load_settings()

    async def work() -> Observation | dict[str, object]:
        database = Database.from_settings(settings)
        try:
            uid = await _cluster_uid(database, tenant, name)
            simulator = SimulatorOrchestrator(database, settings.simulator_step_seconds)
            if action == "show":
                state = await simulator.state(uid)
                if state is None:
                    raise CliError(
                        "NOT_PROVISIONED", "the simulator has not provisioned this cluster yet"
                    )
                return {
                    _camel(column.name): _json_value(getattr(state, column.name))
                    for column in state.__table__.columns
                    if column.name != "certificate_authority"
                }
            if action == "fail":
                component = options["component"]
                assert component in ("control-plane", "etcd")
                observation = await simulator.fail_replicas(
                    uid, component, int(str(options["count"]))
                )
            else:
                observation = await simulator.recover(uid)
            await _nudge(database, uid)
            return observation
        finally:
            await database.dispose()

    try:
        result = run_async(settings, work())
    except UnknownSimulatedCluster as exc:
        raise CliError(
            "NOT_PROVISIONED", "the simulator has no running deployment of this cluster"
        ) from exc
    if isinstance(result, Observation):
        echo_result(as_json, _observation_json(result), _observation_text(tenant, name, result))
    else:
        echo_result(as_json, result, "\n".join(f"{key}: {value}" for key, value in result.items()))


@simulator_app.command("fail-replica")
def fail_replica(
    tenant: str,
    cluster: str,
    component: ComponentOption = "control-plane",
    count: Annotated[int, typer.Option(min=1, max=3, help="How many replicas fail.")] = 1,
    as_json: JsonOption = False,
) -> None:
    """Make replicas of a cluster unready (they stay down until `recover`)."""
    if component not in ("control-plane", "etcd"):
        raise CliError("USAGE", "--component must be control-plane or etcd", EXIT_USAGE)
    _run(tenant, cluster, "fail", as_json, component=component, count=count)


@simulator_app.command("recover")
def recover(tenant: str, cluster: str, as_json: JsonOption = False) -> None:
    """Restart failed replicas; they become Ready again one per simulator step."""
    _run(tenant, cluster, "recover", as_json)


@simulator_app.command("show")
def show(tenant: str, cluster: str, as_json: JsonOption = False) -> None:
    """Print the simulated deployment's state (replicas, stage, operation counters)."""
    _run(tenant, cluster, "show", as_json)
