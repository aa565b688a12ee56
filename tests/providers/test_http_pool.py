"""The pooled clients verify the servers they call, with one TLS context per process."""

from __future__ import annotations

import asyncio
import ssl
from ipaddress import IPv4Address
from pathlib import Path

import httpx
import pytest
from cryptography import x509

from tenantplane.providers.http_pool import PooledClient, verifying_tls
from tests.tls import self_signed


def _self_signed(directory: Path) -> ssl.SSLContext:
    certificate, key = self_signed(directory, "server", x509.IPAddress(IPv4Address("127.0.0.1")))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate, key)
    return context


async def _answer(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


def test_one_verifying_context_per_process() -> None:
    context = verifying_tls()
    assert verifying_tls() is context
    assert verifying_tls(trust_env=False) is not context
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname


async def test_a_server_no_authority_vouches_for_is_refused(tmp_path: Path) -> None:
    server = await asyncio.start_server(_answer, "127.0.0.1", 0, ssl=_self_signed(tmp_path))
    port = server.sockets[0].getsockname()[1]
    pooled = PooledClient(timeout=5)
    try:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await pooled.client.get(f"https://127.0.0.1:{port}/")
    finally:
        await pooled.aclose()
        server.close()
        await server.wait_closed()
