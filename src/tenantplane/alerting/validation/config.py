"""The whole configuration wrapper: global, receivers, route, templates, time intervals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tenantplane.alerting.validation.errors import ConfigError, join
from tenantplane.alerting.validation.firewall import Firewall
from tenantplane.alerting.validation.goregex import (
    RegexBudget,
    RegexError,
    RegexLimitError,
    check_go_regex,
)
from tenantplane.alerting.validation.integrations import GLOBAL, INTEGRATIONS, check_receiver
from tenantplane.alerting.validation.limits import check_name, check_route_depth
from tenantplane.alerting.validation.matchers import LABEL_NAME, parse_matchers
from tenantplane.alerting.validation.policy import Policy
from tenantplane.alerting.validation.schema import (
    HOST_PORT_KINDS,
    URL_KINDS,
    boolean,
    duration,
    fields_of_kinds,
    list_of,
    string,
    string_list,
)
from tenantplane.alerting.validation.templates import (
    check_template_set,
    parse_files,
    templated_fields,
)
from tenantplane.alerting.validation.timeintervals import check_time_interval

ROUTE_FIELDS = frozenset(
    {
        "receiver",
        "group_by",
        "group_wait",
        "group_interval",
        "repeat_interval",
        "continue",
        "matchers",
        "match",
        "match_re",
        "active_time_intervals",
        "mute_time_intervals",
        "routes",
    }
)
# Template file names: plain file names, so that they are safe as paths on every backend.
TEMPLATE_FILENAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")


def _label_map(value: Any, path: str, *, regex_budget: RegexBudget | None) -> None:
    """Label names to values; the values are regular expressions when a budget is given."""
    if not isinstance(value, dict):
        raise ConfigError("must be an object with string values", path)
    for key, element in value.items():
        if not LABEL_NAME.match(key):
            raise ConfigError(f'invalid label name "{key}"', join(path, key), "INVALID_LABEL_NAME")
        string(element, join(path, key))
        if regex_budget is not None:
            try:
                check_go_regex(element, regex_budget)
            except RegexLimitError as exc:
                raise ConfigError(str(exc), join(path, key), exc.code) from None
            except RegexError as exc:
                raise ConfigError(str(exc), join(path, key), "INVALID_REGEX") from None


def _group_by(value: Any, path: str) -> None:
    string_list(value, path)
    seen: set[str] = set()
    for index, label in enumerate(value):
        if label == "...":
            continue
        if not LABEL_NAME.match(label):
            raise ConfigError(
                f'invalid label name "{label}" in group_by list',
                join(path, index),
                "INVALID_LABEL_NAME",
            )
        if label in seen:
            raise ConfigError(f'duplicated label "{label}" in group_by', join(path, index))
        seen.add(label)
    if "..." in value and len(value) > 1:
        raise ConfigError(
            "cannot have wildcard group_by (`...`) and other other labels at the same time", path
        )


def _matchers(value: Any, path: str, budget: RegexBudget) -> None:
    string_list(value, path)
    for index, text in enumerate(value):
        try:
            parse_matchers(text, budget)
        except RegexLimitError as exc:
            raise ConfigError(str(exc), join(path, index), exc.code) from None
        except ValueError as exc:
            raise ConfigError(str(exc), join(path, index), "INVALID_MATCHER") from None


def _non_zero(value: str, path: str, name: str) -> None:
    from tenantplane.alerting.validation.durations import parse_duration

    if parse_duration(value) == 0:
        raise ConfigError(f"{name} cannot be zero", path, "INVALID_DURATION")


def check_route(route: Any, path: str, *, root: bool, budget: RegexBudget) -> None:
    """One route and its children (Route.UnmarshalYAML, plus the root route's rules);
    their regular expressions spend one configuration's ``budget``."""
    if not isinstance(route, dict):
        raise ConfigError("must be an object", path)
    for key in route:
        if key not in ROUTE_FIELDS:
            raise ConfigError(f"unknown field: {key}", join(path, key), "UNKNOWN_FIELD")
    if "receiver" in route:
        string(route["receiver"], join(path, "receiver"))
    if "group_by" in route:
        _group_by(route["group_by"], join(path, "group_by"))
    for name in ("group_wait", "group_interval", "repeat_interval"):
        if name in route:
            duration(route[name], join(path, name))
    for name in ("group_interval", "repeat_interval"):
        if name in route:
            _non_zero(route[name], join(path, name), name)
    if "continue" in route:
        boolean(route["continue"], join(path, "continue"))
    if "matchers" in route:
        _matchers(route["matchers"], join(path, "matchers"), budget)
    if "match" in route:
        _label_map(route["match"], join(path, "match"), regex_budget=None)
    if "match_re" in route:
        _label_map(route["match_re"], join(path, "match_re"), regex_budget=budget)
    for name in ("active_time_intervals", "mute_time_intervals"):
        if name in route:
            string_list(route[name], join(path, name))
    if root:
        _check_root(route, path)
    children = route.get("routes", [])
    if not isinstance(children, list):
        raise ConfigError("must be an array of routes", join(path, "routes"))
    for index, child in enumerate(children):
        check_route(child, join(join(path, "routes"), index), root=False, budget=budget)


def _check_root(route: dict[str, Any], path: str) -> None:
    if not route.get("receiver"):
        raise ConfigError("root route must specify a default receiver", join(path, "receiver"))
    if route.get("match") or route.get("match_re") or route.get("matchers"):
        raise ConfigError("root route must not have any matchers", path)
    if route.get("continue"):
        raise ConfigError("cannot have continue in root route", join(path, "continue"))
    if route.get("mute_time_intervals"):
        raise ConfigError("root route must not have any mute time intervals", path)
    if route.get("active_time_intervals"):
        raise ConfigError("root route must not have any active time intervals", path)


def walk_routes(route: dict[str, Any], path: str) -> Iterator[tuple[dict[str, Any], str]]:
    yield route, path
    for index, child in enumerate(route.get("routes", [])):
        yield from walk_routes(child, join(join(path, "routes"), index))


def _check_time_intervals(value: Any) -> set[str]:
    if not isinstance(value, list):
        raise ConfigError("must be an array", "time_intervals")
    names: set[str] = set()
    for index, entry in enumerate(value):
        path = join("time_intervals", index)
        if not isinstance(entry, dict):
            raise ConfigError("must be an object", path)
        for key in entry:
            if key not in ("name", "time_intervals"):
                raise ConfigError(f"unknown field: {key}", join(path, key), "UNKNOWN_FIELD")
        name = entry.get("name")
        if name is not None:
            string(name, join(path, "name"))
        if not name:
            raise ConfigError("missing name in time interval", join(path, "name"))
        check_name(name, join(path, "name"), "time interval")
        if name in names:
            raise ConfigError(f'time interval "{name}" is not unique', join(path, "name"))
        names.add(name)
        intervals = entry.get("time_intervals", [])
        if not isinstance(intervals, list):
            raise ConfigError("must be an array", join(path, "time_intervals"))
        for position, interval in enumerate(intervals):
            check_time_interval(interval, join(join(path, "time_intervals"), position))
    return names


def check_templates(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError("must be an object mapping file names to contents", "templates")
    for filename, contents in value.items():
        path = join("templates", filename)
        check_template_filename(filename, path)
        string(contents, path)
    return value


def _check_destinations(glob: Any, receivers: list[Any], firewall: Firewall) -> None:
    """Every field naming where Alertmanager connects, through the receivers firewall."""
    kinds = URL_KINDS | HOST_PORT_KINDS
    found = list(fields_of_kinds(GLOBAL, glob, "global", kinds))
    for index, receiver in enumerate(receivers):
        for key, (shape, _) in INTEGRATIONS.items():
            if key in receiver:
                path = join(join("receivers", index), key)
                found.extend(fields_of_kinds(list_of(shape), receiver[key], path, kinds))
    for kind, value, path in found:
        if kind in HOST_PORT_KINDS:
            firewall.check_host_port(value, path)
        else:
            firewall.check_url(value, path)


def check_template_filename(filename: str, path: str) -> None:
    if not TEMPLATE_FILENAME.match(filename):
        raise ConfigError(
            "template file names are 1-128 letters, digits, '.', '_' or '-', not starting "
            "with '.' or '-'",
            path,
            "INVALID_NAME",
        )


def validate_config(config: dict[str, Any], policy: Policy | None = None) -> None:
    """Raise ConfigError for the first problem Alertmanager would also refuse, or that
    breaks the deployment's ``policy`` (template limits, receivers firewall)."""
    policy = policy or Policy()
    glob = config.get("global", {})
    GLOBAL(glob, "global")
    interval_names = _check_time_intervals(config.get("time_intervals", []))
    receivers = config.get("receivers", [])
    if not isinstance(receivers, list):
        raise ConfigError("must be an array of receivers", "receivers")
    names: set[str] = set()
    for index, receiver in enumerate(receivers):
        path = join("receivers", index)
        check_receiver(receiver, glob, path)
        check_name(receiver["name"], join(path, "name"), "receiver")
        if receiver["name"] in names:
            raise ConfigError(
                f'notification config name "{receiver["name"]}" is not unique', join(path, "name")
            )
        names.add(receiver["name"])
    route = config.get("route")
    if route is None:
        raise ConfigError("no routes provided", "route")
    check_route_depth(route, "route", 0)
    check_route(route, "route", root=True, budget=RegexBudget())
    for node, path in walk_routes(route, "route"):
        receiver = node.get("receiver")
        if receiver and receiver not in names:
            raise ConfigError(
                f'undefined receiver "{receiver}" used in route',
                join(path, "receiver"),
                "UNDEFINED_RECEIVER",
            )
        for field in ("mute_time_intervals", "active_time_intervals"):
            for position, name in enumerate(node.get(field, [])):
                if name not in interval_names:
                    raise ConfigError(
                        f'undefined time interval "{name}" used in route',
                        join(join(path, field), position),
                        "UNDEFINED_TIME_INTERVAL",
                    )
    outlines = parse_files(check_templates(config.get("templates", {})), policy.templates)
    check_template_set(outlines, templated_fields(receivers), policy.templates)
    _check_destinations(glob, receivers, policy.firewall)
