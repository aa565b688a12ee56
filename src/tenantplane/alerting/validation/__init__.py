"""Validation of a tenant's Alertmanager configuration, equal to Alertmanager's own.

Each module ports one piece of the loader of Alertmanager 0.25.0 as Debian builds it (Go
1.19.8): durations, matchers, regular expressions (judged by RE2 itself), URLs, time
intervals, Go template syntax, integrations. So a write the API accepts is a configuration
`amtool check-config` accepts, and the reverse, except for the deliberate policy on top
(policy.py: template rules and limits, the receivers firewall; limits.py).
"""

from tenantplane.alerting.validation.errors import ConfigError

__all__ = ["ConfigError"]
