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
    """Sockets bound to every address of ``host`` (not yet listening), as asyncio's
    ``create_server`` binds them: the address reusable at once after a restart, IPv6
    sockets IPv6-only. ``CannotListen`` says why when one cannot be bound, naming the
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
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                raise _refusal(host, port, exc, (host_option, port_option)) from exc
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets
