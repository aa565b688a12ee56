"""The destinations firewall: where the platform may connect on a tenant's behalf.

Tenants name destinations the platform then connects to: alerting receivers (through
Alertmanager) and webhooks (from the worker). Both are judged here, with the same settings
(``TENANTPLANE_ALERTING_FIREWALL_BLOCK_PRIVATE``, ``TENANTPLANE_ALERTING_FIREWALL_BLOCK_CIDRS``):
private, loopback, link-local and reserved addresses are refused unless the operator allows
them, so are the networks the operator blocks, and the shared Alertmanager itself always.

This module judges one host as it is dialled (an ASCII name or an address) and a port. How a
URL is split into them is its caller's: the receivers firewall parses URLs as Alertmanager
does (alerting/validation/firewall.py); webhooks as httpx does, and judge every address the
name resolves to again before each delivery (event/webhook/destination.py).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Private, loopback, link-local (169.254.169.254, the cloud metadata address, among them),
# unspecified ("this host": 0.0.0.0 reaches the local machine), carrier-grade NAT (cloud
# metadata at 100.100.100.200), IETF protocol assignments, benchmarking, multicast,
# reserved and broadcast addresses; IPv6 loopback, unspecified, unique-local (fc00::/7),
# link-local (fe80::/10), site-local and multicast. IPv4 addresses embedded in IPv6 ones
# (mapped, compatible, NAT64, 6to4, Teredo) are judged as the IPv4 address.
PRIVATE_NETWORKS: tuple[Network, ...] = tuple(
    ipaddress.ip_network(network)
    for network in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
        # Local-use NAT64 (RFC 8215): its IPv4 address may sit at any RFC 6052 offset.
        "64:ff9b:1::/48",
    )
)
# Names Linux's /etc/hosts (Debian, Red Hat) gives loopback or non-public addresses; names
# under .localhost are loopback too (RFC 6761).
LOOPBACK_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "localhost4",
        "localhost4.localdomain4",
        "localhost6",
        "localhost6.localdomain6",
        "ip6-localhost",
        "ip6-loopback",
        "ip6-localnet",
        "ip6-mcastprefix",
        "ip6-allnodes",
        "ip6-allrouters",
        "ip6-allhosts",
    }
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")  # IPv4-translated (::ffff:0:a.b.c.d)
_COMPATIBLE = ipaddress.ip_network("::/96")
# What C's inet_aton reads as an IPv4 address ("127.1", "0x7f000001", "017700000001"):
# a resolver may take such a name for one.
_INET_ATON = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}$")

PRIVATE = "a private, loopback, link-local or reserved address"
LOOPBACK_NAME = "a loopback name"
OPERATOR_BLOCKED = "in a network blocked by the operator"


@dataclass(frozen=True)
class Refusal:
    """Why a destination is refused: ``why`` completes "destination HOST is …";
    ``protected``: it is the shared Alertmanager itself (refused whatever else is allowed)."""

    why: str
    protected: bool = False


@dataclass(frozen=True)
class Firewall:
    block_private: bool = True
    block_networks: tuple[Network, ...] = ()
    # Where the shared Alertmanager itself listens (host, port): never a destination,
    # whatever else is allowed (its /-/reload and API must stay out of tenants' reach).
    protected: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(
        cls,
        *,
        block_private: bool,
        block_cidrs: Iterable[str],
        protected: tuple[tuple[str, int], ...] = (),
    ) -> Firewall:
        """A firewall from the operator's settings (CIDRs as written, host bits allowed)."""
        networks = tuple(ipaddress.ip_network(cidr, strict=False) for cidr in block_cidrs)
        return cls(block_private, networks, protected)

    def refusal(self, dialled: str, port: int | None) -> Refusal | None:
        """Why a connection to ``dialled`` (an ASCII host name or an address, as it is
        dialled) on ``port`` is refused; None when it is allowed. Names are not resolved."""
        name = dialled.lower().removesuffix(".")
        address = address_of(name)
        if self._protected(name, address, port):
            return Refusal("the shared Alertmanager itself", protected=True)
        if address is None:
            if self.block_private and loopback_name(name):
                return Refusal(LOOPBACK_NAME)
            return None
        for candidate in judged(address):
            if self.block_private and any(candidate in net for net in PRIVATE_NETWORKS):
                return Refusal(PRIVATE)
            if any(candidate in network for network in self.block_networks):
                return Refusal(OPERATOR_BLOCKED)
        return None

    def _protected(self, name: str, address: Address | None, port: int | None) -> bool:
        for protected_host, protected_port in self.protected:
            if port != protected_port:
                continue
            own = address_of(protected_host)
            if name == protected_host or (address is not None and address == own):
                return True
            # On a loopback or unspecified address, every local name reaches it.
            if (own is None and protected_host == "localhost") or (
                own is not None and (own.is_loopback or own.is_unspecified)
            ):
                local = address is not None and any(
                    a.is_loopback or a.is_unspecified for a in judged(address)
                )
                if local or loopback_name(name):
                    return True
        return False


def loopback_name(name: str) -> bool:
    return name in LOOPBACK_NAMES or name.endswith(".localhost")


def address_of(host: str) -> Address | None:
    """The address a host written in a URL stands for, or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return _inet_aton(host) if _INET_ATON.match(host) else None


def _aton_part(part: str) -> int:
    if part.startswith("0x"):
        return int(part[2:] or "0", 16)
    return int(part, 8) if len(part) > 1 and part.startswith("0") else int(part)


def _inet_aton(host: str) -> Address | None:
    """inet_aton's forms: a.b.c.d, a.b.c (c 16 bits), a.b (b 24 bits), a (32 bits)."""
    try:
        *leading, last = [_aton_part(part) for part in host.split(".")]
    except ValueError:
        return None  # "08": not octal, so a name
    if any(part > 255 for part in leading) or last >= 256 ** (4 - len(leading)):
        return None
    value = 0
    for part in leading:
        value = value * 256 + part
    return ipaddress.IPv4Address(value * 256 ** (4 - len(leading)) + last)


def judged(address: Address) -> list[Address]:
    """The address and any IPv4 address it carries inside."""
    if isinstance(address, ipaddress.IPv4Address):
        return [address]
    embedded: list[Address] = [address]
    if address.ipv4_mapped is not None:
        embedded.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        embedded.append(address.sixtofour)
    if address.teredo is not None:
        embedded.extend(address.teredo)
    if address in _NAT64 or address in _SIIT or (address in _COMPATIBLE and int(address) > 1):
        embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return embedded
