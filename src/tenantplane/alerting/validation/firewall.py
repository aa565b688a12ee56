"""The receivers firewall: where a tenant's integrations may make Alertmanager connect.

Like Mimir's `-alertmanager.receivers-firewall-block-private-addresses` and
`-alertmanager.receivers-firewall-block-cidr-networks`, but checked when a configuration
is written, on every field that names a destination (URLs, OAuth2 token URLs, SMTP
smarthosts), for hosts written as addresses, judged as Alertmanager dials them
(hostnames.py: escapes decoded, non-ASCII hosts mapped through IDNA as Go's net/http does).
Names are not resolved here (they may resolve elsewhere later): the operator's egress
policy covers them (docs/security.md). What is refused is decided by the destinations
firewall that webhooks share (http/firewall.py); this adds how Alertmanager reads the
fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenantplane.alerting.validation.addresses import split_host_port, url_host_port
from tenantplane.alerting.validation.errors import ConfigError
from tenantplane.alerting.validation.hostnames import dialled_hosts
from tenantplane.http import firewall


@dataclass(frozen=True)
class Firewall(firewall.Firewall):
    def check_url(self, value: str, path: str) -> None:
        try:
            host, port = url_host_port(value)
        except ValueError:
            return  # not a URL Alertmanager could connect to
        self._check(host, port, path)

    def check_host_port(self, value: str, path: str) -> None:
        try:
            host, port = split_host_port(value)
        except ValueError:
            return
        self._check(host, int(port) if port.isdigit() else None, path)

    def _check(self, host: str, port: int | None, path: str) -> None:
        try:
            dialled = dialled_hosts(host)
        except ValueError as exc:
            raise _blocked(host, str(exc), path) from None
        for form in dialled:
            # One ASCII form of the written ``host`` (which messages name).
            refusal = self.refusal(form, port)
            if refusal is None:
                continue
            if refusal.protected:
                raise ConfigError(
                    f"{host}:{port} is the shared Alertmanager itself: not a receiver's "
                    "destination",
                    path,
                    "DESTINATION_BLOCKED",
                )
            raise _blocked(host, refusal.why, path)


def _blocked(host: str, why: str, path: str) -> ConfigError:
    message = f"destination {host} is {why}; receivers may not send there"
    # Escapes of bytes that are not UTF-8 were decoded to surrogates: shown as \xNN.
    shown = message.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return ConfigError(shown, path, "DESTINATION_BLOCKED")
