"""The deployment's alerting policy (template limits, receivers firewall) from settings."""

from __future__ import annotations

import ipaddress

from tenantplane.alerting.validation.addresses import url_host_port
from tenantplane.alerting.validation.firewall import Firewall
from tenantplane.alerting.validation.policy import Policy
from tenantplane.alerting.validation.templates import TemplateLimits
from tenantplane.config import Settings


def _listens_at(url: str | None) -> tuple[tuple[str, int], ...]:
    """(host, port) of the shared Alertmanager's URL, for the firewall to protect."""
    if not url:
        return ()
    try:
        host, port = url_host_port(url)
    except ValueError:
        return ()
    return ((host.lower().removesuffix("."), port),) if port is not None else ()


def policy_from_settings(settings: Settings) -> Policy:
    return Policy(
        templates=TemplateLimits(
            max_file_bytes=settings.alerting_max_template_size_bytes,
            max_files=settings.alerting_max_templates_count,
            max_invocations=settings.alerting_max_template_invocations,
            max_output_bytes=settings.alerting_max_template_output_bytes,
            max_steps=settings.alerting_max_template_steps,
        ),
        firewall=Firewall(
            block_private=settings.alerting_firewall_block_private,
            block_networks=tuple(
                ipaddress.ip_network(cidr, strict=False)
                for cidr in settings.alerting_firewall_block_cidrs
            ),
            protected=_listens_at(settings.alertmanager_url),
        ),
    )
