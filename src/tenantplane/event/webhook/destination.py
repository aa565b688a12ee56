"""Where a webhook may send: its URL checked when it is written, and its host's addresses
checked again before every attempt.

The URL is read as httpx, which sends the deliveries, reads it: http or https, a host, no
userinfo, no fragment. Its host goes through the destinations firewall (http/firewall.py,
the alerting receivers' settings): a host written as a private, loopback, link-local,
reserved or operator-blocked address, a loopback name, or the shared Alertmanager, is
refused with 400 ``DESTINATION_BLOCKED`` (``field: url``). A name is not resolved then: it
may resolve elsewhere by the time anything is sent. So before every attempt the worker
resolves it, judges every address it resolves to, and connects only to an address it has
judged (the request goes to that address, with the URL's host in ``Host`` and as the TLS
server name): a name that resolves to a refused address, or rebinds to one between the
check and the connection, is a failed attempt, and nothing is sent there.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass

import httpx

from tenantplane.config import Settings
from tenantplane.http.errors import ValidationFailed
from tenantplane.http.firewall import Firewall, address_of

MAX_URL_LENGTH = 2048
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?"
_HOST_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*\.?$")


class DestinationRefused(Exception):
    """The destination's address is one the firewall refuses: nothing was sent."""


def firewall_from_settings(settings: Settings) -> Firewall:
    """The alerting receivers' firewall settings, and the shared Alertmanager protected."""
    protected: tuple[tuple[str, int], ...] = ()
    if settings.alertmanager_url:
        try:
            url = httpx.URL(settings.alertmanager_url)
            port = url.port or _DEFAULT_PORTS.get(url.scheme)
            if url.host and port is not None:
                protected = ((url.raw_host.decode("ascii").lower().removesuffix("."), port),)
        except httpx.InvalidURL:
            pass
    return Firewall.of(
        block_private=settings.alerting_firewall_block_private,
        block_cidrs=settings.alerting_firewall_block_cidrs,
        protected=protected,
    )


def _invalid(reason: str) -> ValidationFailed:
    return ValidationFailed(f"url: {reason}", field="url", code="INVALID_URL")


def parse_url(value: str) -> httpx.URL:
    """The URL as httpx sends to it; 400 ``INVALID_URL`` (``field: url``) otherwise."""
    if len(value) > MAX_URL_LENGTH:
        raise _invalid(f"at most {MAX_URL_LENGTH} characters")
    if any(char.isspace() or ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        raise _invalid("must not contain spaces or control characters")
    try:
        url = httpx.URL(value)
        port = url.port
    except httpx.InvalidURL as exc:
        raise _invalid(str(exc)) from None
    if url.scheme not in _DEFAULT_PORTS:
        raise _invalid("must be an http:// or https:// URL")
    if url.userinfo:
        raise _invalid("must not carry a user name or password (userinfo)")
    if url.fragment:
        raise _invalid("must not have a fragment (#…): it is never sent")
    host = url.raw_host.decode("ascii").lower()
    if not host or not (address_of(host) is not None or _HOST_NAME.match(host)):
        raise _invalid("must have a valid host")
    if port is not None and not 0 < port < 65536:
        raise _invalid("the port must be 1-65535")
    return url


def check_url(value: str, firewall: Firewall) -> str:
    """``value`` if a webhook may have it as its URL; 400 naming ``url`` otherwise."""
    url = parse_url(value)
    host = url.raw_host.decode("ascii")
    refusal = firewall.refusal(host, port_of(url))
    if refusal is not None:
        raise ValidationFailed(
            f"url: destination {host} is {refusal.why}; webhooks may not send there",
            field="url",
            code="DESTINATION_BLOCKED",
        )
    return value


def port_of(url: httpx.URL) -> int:
    return url.port or _DEFAULT_PORTS[url.scheme]


@dataclass(frozen=True)
class Target:
    """Where one attempt connects: the URL with the judged address as its host, the
    ``Host`` header and the TLS server name of the URL as written."""

    url: httpx.URL
    host_header: str
    sni_hostname: str | None

    def request(
        self, client: httpx.AsyncClient, headers: dict[str, str], body: bytes
    ) -> httpx.Request:
        extensions = {"sni_hostname": self.sni_hostname} if self.sni_hostname else {}
        return client.build_request(
            "POST",
            self.url,
            content=body,
            headers={**headers, "host": self.host_header},
            extensions=extensions,
        )


async def resolve(value: str, firewall: Firewall) -> list[Target]:
    """The targets of one attempt at ``value``, an address at a time in the resolver's
    order; ``DestinationRefused`` if the URL is no longer allowed or any address its host
    resolves to is refused (a name half of whose addresses are private is refused)."""
    try:
        url = parse_url(value)
    except ValidationFailed as exc:
        raise DestinationRefused(exc.error) from None
    host = url.raw_host.decode("ascii").lower()
    port = port_of(url)
    refusal = firewall.refusal(host, port)
    if refusal is not None:
        raise DestinationRefused(f"destination {host} is {refusal.why}")
    literal = address_of(host)
    addresses = [str(literal)] if literal is not None else await _addresses_of(host, port)
    for address in addresses:
        refusal = firewall.refusal(address, port)
        if refusal is not None:
            raise DestinationRefused(f"destination {host} resolves to {address}, {refusal.why}")
    server_name = None if literal is not None or url.scheme != "https" else host.rstrip(".")
    host_header = url.netloc.decode("ascii")
    return [Target(url.copy_with(host=address), host_header, server_name) for address in addresses]


async def _addresses_of(host: str, port: int) -> list[str]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(
            host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
        )
    except OSError as exc:
        raise ConnectionError(f"cannot resolve {host}: {exc}") from None
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        # An IPv6 link-local address may carry its interface (%eth0).
        address = str(ipaddress.ip_address(str(sockaddr[0]).partition("%")[0]))
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise ConnectionError(f"cannot resolve {host}: no address")
    return addresses
