"""One pooled HTTP client per remote service, for the life of the process, and a way to close
the pools of the ``requests``-based SDKs (hvac, Paddle's) at once.

A client per call would open a new connection (and, over HTTPS, a new TLS handshake) for
every request to the service. ``PooledClient`` builds one ``httpx.AsyncClient`` on first use
and keeps its connections alive between calls; whoever owns the adapter closes it at
shutdown (the app's lifespan, the worker's exit, the end of a CLI command). A closed pool
builds a fresh client if it is used again.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Iterable
from typing import Any

import httpx
from requests.adapters import BaseAdapter, HTTPAdapter


@functools.cache
def verifying_tls(*, trust_env: bool = True) -> ssl.SSLContext:
    """The TLS context that verifies servers as httpx's default does (certifi's authorities,
    or SSL_CERT_FILE / SSL_CERT_DIR when the client trusts the environment), made once per
    process: httpx makes one per client otherwise, loading the authorities anew each time
    (tens of milliseconds of CPU; every app or worker builds several clients)."""
    return httpx.create_ssl_context(trust_env=trust_env)


class PooledClient:
    def __init__(self, **options: Any) -> None:
        # httpx.AsyncClient's keyword arguments (timeout, follow_redirects, ...).
        options.setdefault("verify", verifying_tls(trust_env=options.get("trust_env", True)))
        self._options = options
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        # Built lazily: the adapter is created before the event loop that will use it runs.
        if self._client is None or self._client.is_closed:
            self._client = httpx.AsyncClient(**self._options)
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()


def close_adapters(adapters: Iterable[BaseAdapter]) -> None:
    """Close ``requests`` adapters and, at once, the idle connections of their pools.

    ``HTTPAdapter.close()`` clears its pool manager, and urllib3's ``PoolManager.clear()``
    forgets its pools without closing them: their connections would stay open until the
    garbage collector finds them. Closing a pool closes its idle connections; one in use
    is closed when it is handed back.
    """
    for adapter in adapters:
        if isinstance(adapter, HTTPAdapter):
            pools = adapter.poolmanager.pools
            # keys(), not iteration: urllib3's container refuses to be iterated.
            for key in pools.keys():  # noqa: SIM118
                pool = pools.get(key)
                if pool is not None:
                    pool.close()
        adapter.close()
