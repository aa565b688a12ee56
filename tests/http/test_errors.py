from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI

from tenantplane.config import Settings
from tenantplane.db.engine import DatabaseOptions
from tests.factories import Factory
from tests.http_client import api_client, bearer, running_app


@asynccontextmanager
async def swapped_database(
    app: FastAPI, url: str, options: DatabaseOptions | None = None
) -> AsyncIterator[None]:
    """The running app on another database (``url``) while the block runs. The replacement
    is disposed whole afterwards, its plain reads' pool included: left open, that pool
    goes on reconnecting in the background through every later test of the process."""
    await app.state.database.engine.dispose()
    replacement = type(app.state.database).connect(url, options)
    app.state.database = replacement
    try:
        yield
    finally:
        await replacement.dispose()


async def test_unknown_route_is_404_in_the_envelope(client: httpx.AsyncClient) -> None:
    response = await client.get("/no/such/route")
    assert response.status_code == 404
    assert response.json() == {
        "error": "not found",
        "code": "NOT_FOUND",
        "message": "not found",
        "severity": "error",
    }
    assert response.headers["X-Request-Id"]


async def test_wrong_method_is_405_in_the_envelope(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.put(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert "POST" in response.headers["Allow"]


async def test_malformed_json_is_400(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/apikeys",
        content=b'{"displayName": ',
        headers={**bearer(tenant.admin_key), "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["code"] == "MALFORMED_JSON"


async def test_json_body_without_content_type_is_accepted(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/apikeys",
        content=b'{"displayName": "x", "role": "readonly"}',
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 201


async def test_non_json_body_is_400(client: httpx.AsyncClient, factory: Factory) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/apikeys",
        data={"displayName": "x", "role": "readonly"},
        headers=bearer(tenant.admin_key),
    )
    assert response.status_code == 415
    assert response.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_body_that_is_not_an_object_is_400(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    response = await client.post(
        f"{tenant.path}/apikeys", json=[1, 2], headers=bearer(tenant.admin_key)
    )
    assert response.status_code == 400
    assert response.json()["code"] == "VALIDATION_FAILED"


async def test_bodies_over_one_mebibyte_are_413(
    client: httpx.AsyncClient, factory: Factory
) -> None:
    tenant = await factory.tenant()
    big = b'{"displayName": "' + b"x" * (1024 * 1024) + b'", "role": "admin"}'
    declared = await client.post(
        f"{tenant.path}/apikeys",
        content=big,
        headers={**bearer(tenant.admin_key), "Content-Type": "application/json"},
    )
    assert declared.status_code == 413
    assert declared.json()["code"] == "PAYLOAD_TOO_LARGE"

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    streamed = await client.post(
        f"{tenant.path}/apikeys",
        content=chunks(),
        headers={**bearer(tenant.admin_key), "Content-Type": "application/json"},
    )
    assert streamed.status_code == 413
    assert streamed.json()["code"] == "PAYLOAD_TOO_LARGE"
    listed = await client.get(f"{tenant.path}/apikeys", headers=bearer(tenant.admin_key))
    assert len(listed.json()["items"]) == 2  # the factory's two keys, nothing new


async def test_unexpected_failure_is_500_without_internals(
    settings: Settings, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    # A database without the schema: every query fails inside the route, not transiently.
    empty = f"sqlite+aiosqlite:///{tmp_path / 'secret-password' / 'empty.db'}"
    async with (
        running_app(settings) as app,
        swapped_database(app, empty),
        api_client(app) as client,
    ):
        response = await client.get(tenant.path, headers=bearer(tenant.admin_key))
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal server error",
        "code": "INTERNAL",
        "message": "internal server error",
        "severity": "error",
    }
    assert "secret-password" not in response.text
    assert response.headers["X-Request-Id"]


async def test_unreachable_database_is_a_retryable_503_without_internals(
    settings: Settings, tmp_path: Path, factory: Factory
) -> None:
    tenant = await factory.tenant()
    unreachable = "postgresql+asyncpg://nobody:secret-password@127.0.0.1:1/none"
    async with (
        running_app(settings) as app,
        swapped_database(app, unreachable),
        api_client(app) as client,
    ):
        response = await client.get(tenant.path, headers=bearer(tenant.admin_key))
    assert response.status_code == 503
    assert response.json()["code"] == "DATABASE_UNAVAILABLE"
    assert response.headers["Retry-After"] == "5"
    assert "secret-password" not in response.text
    assert "127.0.0.1" not in response.text
    assert response.headers["X-Request-Id"]


async def test_a_database_that_never_answers_the_connection_is_a_retryable_503(
    settings: Settings, factory: Factory
) -> None:
    # The server accepts the TCP connection (the kernel's backlog) but never speaks, so the
    # driver gives up with its own connect timeout (psycopg's ConnectionTimeout).
    tenant = await factory.tenant()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        silent_server = f"postgresql+psycopg://nobody@127.0.0.1:{port}/none"
        async with (
            running_app(settings) as app,
            swapped_database(app, silent_server, DatabaseOptions(pool_timeout_seconds=1)),
            api_client(app) as client,
        ):
            response = await client.get(tenant.path, headers=bearer(tenant.admin_key))
    assert response.status_code == 503
    assert response.json()["code"] == "DATABASE_UNAVAILABLE"
    assert response.headers["Retry-After"]


async def test_request_id_is_echoed_when_sane_and_generated_otherwise(
    client: httpx.AsyncClient, app: FastAPI
) -> None:
    echoed = await client.get("/no/such", headers={"X-Request-Id": "abc-123"})
    assert echoed.headers["X-Request-Id"] == "abc-123"
    replaced = await client.get("/no/such", headers={"X-Request-Id": "bad id\twith spaces"})
    assert replaced.headers["X-Request-Id"] != "bad id\twith spaces"
    assert len(replaced.headers["X-Request-Id"]) == 32


async def test_openapi_describes_error_responses_with_the_envelope(
    client: httpx.AsyncClient,
) -> None:
    base = str(client.base_url).removesuffix("/api/v1/").removesuffix("/api/v1")
    document = (await client.get(f"{base}/openapi.json")).json()
    operation = document["paths"]["/api/v1/tenants/{tenant}/apikeys"]["post"]
    for status in ("400", "401", "403", "429"):
        schema = operation["responses"][status]["content"]["application/json"]["schema"]
        assert schema["$ref"].endswith("/ErrorEnvelope")
    # Validation failures are 400: FastAPI's 422 is never answered. The 422 documented is
    # the reused Idempotency-Key's, in the envelope too.
    reused = operation["responses"]["422"]["content"]["application/json"]["schema"]
    assert reused["$ref"].endswith("/ErrorEnvelope")
    listing = document["paths"]["/api/v1/tenants/{tenant}/apikeys"]["get"]
    assert "422" not in listing["responses"]
