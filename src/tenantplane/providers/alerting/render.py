"""Rendering documents as Alertmanager configuration files (alertmanager.yml)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

from tenantplane.providers.alerting.base import Document

UNROUTED_RECEIVER = "tenantplane-unrouted"
TENANT_LABEL = "tenant"

# Global settings an integration inherits when it does not set its own (Alertmanager's
# Config.UnmarshalYAML): integration key -> ((integration field, global field), ...).
_INHERITED: dict[str, tuple[tuple[str, str], ...]] = {
    "email_configs": (
        ("smarthost", "smtp_smarthost"),
        ("from", "smtp_from"),
        ("hello", "smtp_hello"),
        ("auth_username", "smtp_auth_username"),
        ("auth_password", "smtp_auth_password"),
        ("auth_secret", "smtp_auth_secret"),
        ("auth_identity", "smtp_auth_identity"),
        ("require_tls", "smtp_require_tls"),
    ),
    "slack_configs": (("api_url", "slack_api_url"), ("http_config", "http_config")),
    "webhook_configs": (("http_config", "http_config"),),
    "pagerduty_configs": (("url", "pagerduty_url"), ("http_config", "http_config")),
    "opsgenie_configs": (
        ("api_url", "opsgenie_api_url"),
        ("api_key", "opsgenie_api_key"),
        ("http_config", "http_config"),
    ),
    "discord_configs": (("http_config", "http_config"),),
    "telegram_configs": (("api_url", "telegram_api_url"), ("http_config", "http_config")),
    "pushover_configs": (("http_config", "http_config"),),
    "victorops_configs": (
        ("api_url", "victorops_api_url"),
        ("api_key", "victorops_api_key"),
        ("http_config", "http_config"),
    ),
    "webex_configs": (("api_url", "webex_api_url"),),
}


def _without_redirects(receiver: dict[str, Any]) -> dict[str, Any]:
    """``receiver`` with ``follow_redirects: false`` in every integration's own http_config
    (Alertmanager's default is true): a receiver answering 307 to an internal address would
    otherwise lead Alertmanager past the receivers firewall."""
    rendered = copy.deepcopy(receiver)
    for key, integrations in rendered.items():
        if key in ("name", "email_configs") or not isinstance(integrations, list):
            continue
        for integration in integrations:
            if isinstance(integration.get("http_config"), dict):
                integration["http_config"]["follow_redirects"] = False
    return rendered


def dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False)


def alertmanager_config(document: Document, template_paths: list[str]) -> dict[str, Any]:
    """One tenant's document as an Alertmanager configuration (the YAML's structure)."""
    # Integrations without an http_config of their own inherit the global one: redirects
    # off there too.
    glob = copy.deepcopy(document["global"])
    glob["http_config"] = {**glob.get("http_config", {}), "follow_redirects": False}
    config: dict[str, Any] = {"global": glob}
    config["route"] = copy.deepcopy(document["route"])
    config["receivers"] = [_without_redirects(r) for r in document["receivers"]]
    if document["time_intervals"]:
        config["time_intervals"] = copy.deepcopy(document["time_intervals"])
    if template_paths:
        config["templates"] = template_paths
    return config


ADOPTABLE_KEYS = frozenset(
    {"global", "route", "receivers", "time_intervals", "mute_time_intervals", "templates"}
)


def document_from_alertmanager(
    config: dict[str, Any], template_files: Mapping[str, str]
) -> Document | None:
    """A document from an existing Alertmanager configuration, or None when it holds
    something the API does not model (inhibit rules, for instance)."""
    if set(config) - ADOPTABLE_KEYS:
        return None
    intervals = [*(config.get("time_intervals") or []), *(config.get("mute_time_intervals") or [])]
    return {
        "global": config.get("global") or {},
        "receivers": config.get("receivers") or [],
        "route": config.get("route") or {},
        "templates": dict(template_files),
        "time_intervals": intervals,
    }


def tenant_yaml(document: Document) -> str:
    """alertmanager.yml for one tenant, templates referenced by their file names."""
    return dump_yaml(alertmanager_config(document, sorted(document["templates"])))


# --- one shared Alertmanager for all tenants -------------------------------------------


def shared_name(tenant: str, name: str) -> str:
    return f"{tenant}/{name}"


def shared_template_filename(tenant: str, filename: str) -> str:
    return f"{tenant}__{filename}"


def _with_globals(receiver: dict[str, Any], glob: Mapping[str, Any]) -> dict[str, Any]:
    """Inline a tenant's global settings: the shared file's global section is not theirs."""
    inlined = copy.deepcopy(receiver)
    for key, inherited in _INHERITED.items():
        for config in inlined.get(key, []):
            for field, global_field in inherited:
                if field not in config and global_field in glob:
                    config[field] = copy.deepcopy(glob[global_field])
    return inlined


def _renamed_route(route: dict[str, Any], tenant: str) -> dict[str, Any]:
    renamed = {key: copy.deepcopy(value) for key, value in route.items() if key != "routes"}
    if "receiver" in renamed:
        renamed["receiver"] = shared_name(tenant, renamed["receiver"])
    for key in ("mute_time_intervals", "active_time_intervals"):
        if key in renamed:
            renamed[key] = [shared_name(tenant, name) for name in renamed[key]]
    if route.get("routes"):
        renamed["routes"] = [_renamed_route(child, tenant) for child in route["routes"]]
    return renamed


def tenant_subtree(tenant: str, document: Document) -> dict[str, Any]:
    """The tenant's root route, confined to alerts labelled tenant="<name>"."""
    subtree = _renamed_route(document["route"], tenant)
    subtree["matchers"] = [f'{TENANT_LABEL}="{tenant}"']
    subtree["continue"] = False
    # Keys first for readable files: receiver, matchers, then the tenant's settings.
    ordered = {"receiver": subtree.pop("receiver"), "matchers": subtree.pop("matchers")}
    ordered.update(subtree)
    return ordered


def shared_config(documents: Mapping[str, Document], template_dir: str) -> dict[str, Any]:
    """Every tenant's tree under one root route whose children match tenant="<name>"."""
    receivers: list[dict[str, Any]] = [{"name": UNROUTED_RECEIVER}]
    intervals: list[dict[str, Any]] = []
    routes: list[dict[str, Any]] = []
    for tenant, document in sorted(documents.items()):
        for receiver in document["receivers"]:
            renamed = _without_redirects(_with_globals(receiver, document["global"]))
            renamed["name"] = shared_name(tenant, receiver["name"])
            receivers.append(renamed)
        for entry in document["time_intervals"]:
            intervals.append({**copy.deepcopy(entry), "name": shared_name(tenant, entry["name"])})
        routes.append(tenant_subtree(tenant, document))
    config: dict[str, Any] = {
        # Inherited by integrations without an http_config (tenants' own are inlined).
        "global": {"http_config": {"follow_redirects": False}},
        "route": {"receiver": UNROUTED_RECEIVER, "routes": routes},
    }
    config["receivers"] = receivers
    if intervals:
        config["time_intervals"] = intervals
    config["templates"] = [f"{template_dir}/*"]
    return config


def shared_template_files(documents: Mapping[str, Document]) -> dict[str, str]:
    return {
        shared_template_filename(tenant, filename): contents
        for tenant, document in documents.items()
        for filename, contents in document["templates"].items()
    }
