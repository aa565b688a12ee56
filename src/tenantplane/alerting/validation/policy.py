"""What a deployment allows beyond Alertmanager's own rules: template limits and the
receivers firewall (set from the service's settings)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tenantplane.alerting.validation.firewall import Firewall
from tenantplane.alerting.validation.templates import TemplateLimits


@dataclass(frozen=True)
class Policy:
    templates: TemplateLimits = field(default_factory=TemplateLimits)
    firewall: Firewall = field(default_factory=Firewall)
