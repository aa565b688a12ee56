"""Validation of a tenant's Alertmanager configuration, equal to Alertmanager's own.

Each module ports one piece of Alertmanager 0.25's loader (durations, matchers, regular
expressions, URLs, time intervals, Go template syntax, integrations) so that a write the
API accepts is a configuration `amtool check-config` accepts, and the reverse.
"""

from tenantplane.alerting.validation.errors import ConfigError

__all__ = ["ConfigError"]
