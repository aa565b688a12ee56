"""tpctl alerting: the wrapper and each section."""

from __future__ import annotations

from tenantplane_client.cli.common import (
    DetailedOutputOption,
    FileOption,
    OutputOption,
    client,
    detailed,
    group,
    handled,
    read_document,
    read_text,
)
from tenantplane_client.cli.output import Output, default_output, plain, render, say

alerting_app = group("The alerting (Alertmanager) configuration.")

receivers_app = group("Receivers.")
routes_app = group("Child routes of the root route.")
templates_app = group("Template files.")
intervals_app = group("Time intervals.")
global_app = group("The global section.")
alerting_app.add_typer(receivers_app, name="receivers")
alerting_app.add_typer(routes_app, name="routes")
alerting_app.add_typer(templates_app, name="templates")
alerting_app.add_typer(intervals_app, name="time-intervals")
alerting_app.add_typer(global_app, name="global")


@alerting_app.command("config")
@handled
def alerting_config(output: DetailedOutputOption = None) -> None:
    """Print the whole configuration wrapper (global, receivers, route, templates, …)."""
    with client() as api:
        render(api.alerting.get_config(), detailed(output))


@alerting_app.command("apply")
@handled
def alerting_apply(file: FileOption, output: DetailedOutputOption = None) -> None:
    """Replace the whole configuration with a file's."""
    with client() as api:
        render(api.alerting.put_config(read_document(file)), detailed(output))


@alerting_app.command("reset")
@handled
def alerting_reset() -> None:
    """Remove the tenant's configuration (back to the default)."""
    with client() as api:
        api.alerting.reset_config()
    say("Alerting configuration reset")


@receivers_app.command("list")
@handled
def receivers_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_receivers(), output, ("name",))


@receivers_app.command("get")
@handled
def receivers_get(name: str, output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_receiver(name), detailed(output))


@receivers_app.command("put")
@handled
def receivers_put(name: str, file: FileOption, output: DetailedOutputOption = None) -> None:
    """Create or replace a receiver from a file."""
    with client() as api:
        render(api.alerting.put_receiver(name, read_document(file)), detailed(output))


@receivers_app.command("delete")
@handled
def receivers_delete(name: str) -> None:
    """Delete a receiver (refused while a route names it)."""
    with client() as api:
        api.alerting.delete_receiver(name)
    say(f"Receiver {name} deleted")


@routes_app.command("list")
@handled
def routes_list(output: OutputOption = None) -> None:
    """List the root route's child routes; the table shows the INDEX the other commands take."""
    with client() as api:
        routes = api.alerting.list_routes()
    chosen = output or default_output()
    if chosen is not Output.table:
        render(routes, chosen)  # the API's list as it is
        return
    rows = [{"index": index, **plain(route)} for index, route in enumerate(routes)]
    render(rows, chosen, ("index", "receiver", "matchers", "continue"))


@routes_app.command("get")
@handled
def routes_get(index: int, output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_route(index), detailed(output))


@routes_app.command("put")
@handled
def routes_put(index: int, file: FileOption, output: DetailedOutputOption = None) -> None:
    """Insert or replace the child route at INDEX (the route count appends)."""
    with client() as api:
        render(api.alerting.put_route(index, read_document(file)), detailed(output))


@routes_app.command("delete")
@handled
def routes_delete(index: int) -> None:
    """Delete the child route at INDEX (the routes after it move up one)."""
    with client() as api:
        api.alerting.delete_route(index)
    say(f"Route {index} deleted")


@templates_app.command("list")
@handled
def templates_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_templates(), output, ("filename",))


@templates_app.command("get")
@handled
def templates_get(filename: str, output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_template(filename), detailed(output))


@templates_app.command("put")
@handled
def templates_put(filename: str, file: FileOption, output: DetailedOutputOption = None) -> None:
    """Create or replace a template file with a local file's contents."""
    contents = read_text(file)
    with client() as api:
        render(api.alerting.put_template(filename, contents), detailed(output))


@templates_app.command("delete")
@handled
def templates_delete(filename: str) -> None:
    """Delete a template file."""
    with client() as api:
        api.alerting.delete_template(filename)
    say(f"Template {filename} deleted")


@intervals_app.command("list")
@handled
def intervals_list(output: OutputOption = None) -> None:
    with client() as api:
        render(api.alerting.list_time_intervals(), output, ("name",))


@intervals_app.command("get")
@handled
def intervals_get(name: str, output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_time_interval(name), detailed(output))


@intervals_app.command("put")
@handled
def intervals_put(name: str, file: FileOption, output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.put_time_interval(name, read_document(file)), detailed(output))


@intervals_app.command("delete")
@handled
def intervals_delete(name: str) -> None:
    """Delete a time interval (refused while a route names it)."""
    with client() as api:
        api.alerting.delete_time_interval(name)
    say(f"Time interval {name} deleted")


@global_app.command("get")
@handled
def global_get(output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.get_global(), detailed(output))


@global_app.command("put")
@handled
def global_put(file: FileOption, output: DetailedOutputOption = None) -> None:
    with client() as api:
        render(api.alerting.put_global(read_document(file)), detailed(output))
