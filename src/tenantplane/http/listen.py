"""The listening sockets of `tenantplane serve` (and of `worker --metrics-port`), bound
before anything else starts.

uvicorn binds once the app has started (after the migration) and, when it cannot, logs the
``OSError`` among its own records and exits 3: an operator reading a terminal saw
``[Errno 98]`` at the end of a page of log lines. Bound first, an address that cannot be
used is one sentence naming the option that changes it, and nothing has been done yet.
"""

from __future__ import annotations

import errno
import socket
from typing import Any


class CannotListen(Exception):
    """The address cannot be listened on. ``in_use``: another program listens there (the
    port is busy, not wrong); otherwise the host or port given cannot work here."""

    def __init__(self, message: str, *, in_use: bool) -> None:
        super().__init__(message)
        self.message = message
        self.in_use = in_use


def _shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def base_url(address: tuple[Any, ...]) -> str:
    """The URL of a listening socket's address (``getsockname()``)."""
    return f"http://{_shown(address[0], address[1])}"


def _refusal(host: str, port: int, exc: OSError, options: tuple[str, str]) -> CannotListen:
    host_option, port_option = options
    change_port = f"choose another port with {port_option}"
    if exc.errno == errno.EADDRINUSE:
        return CannotListen(f"{_shown(host, port)} is already in use; {change_port}", in_use=True)
    if exc.errno == errno.EADDRNOTAVAIL:
        return CannotListen(
            f"cannot listen on {host}: it is not an address of this machine; "
            f"choose another with {host_option}",
            in_use=False,
        )
    if exc.errno == errno.EACCES:
        return CannotListen(
            f"cannot listen on {_shown(host, port)}: permission denied (ports below 1024 need "
            f"privileges); {change_port}",
            in_use=False,
        )
    return CannotListen(f"cannot listen on {_shown(host, port)}: {exc.strerror}", in_use=False)


def bind_listeners(
    host: str,
    port: int,
    *,
    host_option: str = "--host",
    port_option: str = "--port N (make serve PORT=N)",
) -> list[socket.socket]:
    """Sockets bound to every address of ``host`` (not yet listening), as ``_bound``
    binds them. ``CannotListen`` says why when one cannot be bound, naming the
    options that choose another host or port."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        reason = (
            "it is not a known host name"
            if exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME))
            else f"it cannot be resolved ({exc.strerror})"
        )
        raise CannotListen(
            f"cannot listen on {host}: {reason}; choose another with {host_option}", in_use=False
        ) from exc
    sockets: list[socket.socket] = []
    try:
        # Each address once, in the resolver's order.
        for family, kind, proto, _, address in dict.fromkeys(found):
            try:
                sockets.append(_bound(family, kind, proto, address, reuse_port=False))
            except OSError as exc:
                raise _refusal(host, port, exc, (host_option, port_option)) from exc
    except BaseException:
        _close(sockets)
        raise
    return sockets


def reuse_port_groups(sockets: list[socket.socket], count: int) -> list[list[socket.socket]]:
    """``count`` sets of sockets bound to the addresses of ``sockets`` (which are closed),
    every one with SO_REUSEPORT: one set per API process of `serve --workers N`, and the
    kernel hands each new connection to one of the listening sockets by a hash of its
    addresses. On one shared socket, the process woken first accepted every connection then
    waiting (asyncio's accept loop) and kept them all (bench/history.md, round 19).

    ``sockets`` were bound without the option, and so proved the port free: a socket
    without SO_REUSEPORT (another `serve`'s first bind) cannot share the port with these."""
    addresses = [(sock.family, sock.type, sock.proto, sock.getsockname()) for sock in sockets]
    _close(sockets)
    groups: list[list[socket.socket]] = []
    try:
        for _ in range(count):
            group: list[socket.socket] = []
            groups.append(group)
            for family, kind, proto, address in addresses:
                try:
                    group.append(_bound(family, kind, proto, address, reuse_port=True))
                except OSError as exc:
                    host, port = address[0], address[1]
                    raise _refusal(host, port, exc, ("--host", "--port")) from exc
    except BaseException:
        _close([sock for group in groups for sock in group])
        raise
    return groups


def _bound(family: int, kind: int, proto: int, address: Any, *, reuse_port: bool) -> socket.socket:
    """A socket bound to ``address`` as asyncio's ``create_server`` binds one: the address
    reusable at once after a restart, IPv6 sockets IPv6-only."""
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _close(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()
