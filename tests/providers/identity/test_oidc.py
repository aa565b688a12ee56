"""OIDC tokens through the API, from a loopback provider whose keys the tests control.

Each case sends ``GET /tenants/{tenant}/members`` with the token; the member exists, so
200 means the token was accepted and 401 that it was refused.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tenantplane.app import create_app
from tenantplane.db.engine import Database
from tenantplane.member.models import Role
from tests.conftest import make_settings
from tests.factories import Factory, TenantFixture
from tests.fakes.oidc import AUDIENCE, FakeProvider, ec_key, fake_provider, rsa_key
from tests.http_client import api_client, bearer, running_app

EMAIL = "reader@example.com"


@pytest.fixture
def idp() -> Iterator[FakeProvider]:
    with fake_provider([rsa_key("key-1")]) as provider:
        yield provider


@asynccontextmanager
async def oidc_client(
    database_url: str, tmp_path: Path, provider: FakeProvider, **overrides: Any
) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(
        database_url,
        tmp_path,
        oidc_issuer=provider.issuer,
        oidc_audience=AUDIENCE,
        auth_failure_threshold=1000,
        **overrides,
    )
    async with running_app(settings) as app, api_client(app) as client:
        yield client


@pytest.fixture
async def client(
    database: Database, database_url: str, tmp_path: Path, idp: FakeProvider
) -> AsyncIterator[httpx.AsyncClient]:
    async with oidc_client(database_url, tmp_path, idp) as http:
        yield http


@pytest.fixture
async def tenant(factory: Factory) -> TenantFixture:
    tenant = await factory.tenant()
    await factory.member(tenant.id, EMAIL, Role.readonly)
    return tenant


async def call(client: httpx.AsyncClient, tenant: TenantFixture, token: str) -> httpx.Response:
    return await client.get(f"{tenant.path}/members", headers=bearer(token))


def now() -> int:
    return int(time.time())


Token = Callable[[FakeProvider], str]

REFUSED: dict[str, Token] = {
    "expired": lambda p: p.sign(p.claims(EMAIL, exp=now() - 120, iat=now() - 720)),
    "not yet valid (nbf)": lambda p: p.sign(p.claims(EMAIL, nbf=now() + 300)),
    "issued in the future (iat)": lambda p: p.sign(p.claims(EMAIL, iat=now() + 300)),
    "without exp": lambda p: p.sign(p.claims(EMAIL, exp=None)),
    "without iat": lambda p: p.sign(p.claims(EMAIL, iat=None)),
    "wrong audience": lambda p: p.sign(p.claims(EMAIL, aud="another-application")),
    "without audience": lambda p: p.sign(p.claims(EMAIL, aud=None)),
    "several audiences, no azp": lambda p: p.sign(p.claims(EMAIL, aud=[AUDIENCE, "other"])),
    "wrong issuer": lambda p: p.sign(p.claims(EMAIL, iss="https://idp.evil.example.com")),
    "alg none": lambda p: p.sign_none(p.claims(EMAIL)),
    "HS256 keyed with the public key": lambda p: p.sign_hs256_with_public_key(p.claims(EMAIL)),
    "signed by another key under a known kid": lambda p: p.sign(
        p.claims(EMAIL), rsa_key("key-1", index=1)
    ),
    "unknown kid": lambda p: p.sign(p.claims(EMAIL), rsa_key("key-9", index=1)),
    "EC signature under an RSA kid": lambda p: p.sign(p.claims(EMAIL), ec_key("x"), kid="key-1"),
    "algorithm the provider does not announce": lambda p: p.sign(
        p.claims(EMAIL), algorithm="RS512"
    ),
    "email not verified": lambda p: p.sign(p.claims(EMAIL, email_verified=False)),
    "email_verified absent": lambda p: p.sign(p.claims(EMAIL, email_verified=None)),
    "email_verified a non-boolean": lambda p: p.sign(p.claims(EMAIL, email_verified=1)),
    "no email": lambda p: p.sign(p.claims(EMAIL, email=None)),
    "email not an address": lambda p: p.sign(p.claims("reader-at-example.com")),
    "not a JWT": lambda p: "not-a.jwt",
    "tampered payload": lambda p: _tamper(p.sign(p.claims("someone@example.com")), p),
}


def _tamper(token: str, provider: FakeProvider) -> str:
    header, _, signature = token.split(".")
    forged = provider.sign(provider.claims(EMAIL)).split(".")[1]
    return f"{header}.{forged}.{signature}"


@pytest.mark.parametrize("make_token", REFUSED.values(), ids=REFUSED.keys())
async def test_refused_tokens_are_401(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider, make_token: Token
) -> None:
    response = await call(client, tenant, make_token(idp))
    assert response.status_code == 401, response.text
    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert set(response.json()) == {"error"}


ACCEPTED: dict[str, Token] = {
    "plain": lambda p: p.sign(p.claims(EMAIL)),
    "expired within the leeway": lambda p: p.sign(p.claims(EMAIL, exp=now() - 5)),
    "iat just ahead of our clock": lambda p: p.sign(p.claims(EMAIL, iat=now() + 5)),
    "email in another case": lambda p: p.sign(p.claims("Reader@EXAMPLE.com")),
    "several audiences with azp": lambda p: p.sign(
        p.claims(EMAIL, aud=["other", AUDIENCE], azp=AUDIENCE)
    ),
    "email_verified as the string true": lambda p: p.sign(p.claims(EMAIL, email_verified="true")),
    "no kid, one suitable key": lambda p: p.sign(p.claims(EMAIL), kid=None),
}


@pytest.mark.parametrize("make_token", ACCEPTED.values(), ids=ACCEPTED.keys())
async def test_accepted_tokens_act_as_the_member(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider, make_token: Token
) -> None:
    response = await call(client, tenant, make_token(idp))
    assert response.status_code == 200, response.text
    # The member is readonly: reading works, writing does not.
    denied = await client.post(
        f"{tenant.path}/apikeys",
        json={"displayName": "x", "role": "readonly"},
        headers=bearer(make_token(idp)),
    )
    assert denied.status_code == 403


async def test_valid_token_of_a_non_member_is_403(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider, factory: Factory
) -> None:
    other = await factory.tenant()
    token = idp.sign(idp.claims(EMAIL))
    assert (await call(client, other, token)).status_code == 403
    stranger = idp.sign(idp.claims("stranger@example.com"))
    assert (await call(client, tenant, stranger)).status_code == 403
    # Same answer for a tenant that does not exist.
    missing = await client.get("/tenants/no-such-tenant/members", headers=bearer(token))
    assert missing.status_code == 403


async def test_ec_and_rsa_keys_side_by_side(
    database: Database, database_url: str, tmp_path: Path, tenant: TenantFixture
) -> None:
    rsa, ec = rsa_key("rsa-1"), ec_key("ec-1")
    with fake_provider([rsa, ec]) as provider:
        async with oidc_client(database_url, tmp_path, provider) as client:
            for key in (rsa, ec):
                token = provider.sign(provider.claims(EMAIL), key)
                assert (await call(client, tenant, token)).status_code == 200
            # Without a kid, the algorithm narrows the choice to one key of each type.
            for key in (rsa, ec):
                token = provider.sign(provider.claims(EMAIL), key, kid=None)
                assert (await call(client, tenant, token)).status_code == 200


async def test_no_kid_with_several_suitable_keys_is_401(
    database: Database, database_url: str, tmp_path: Path, tenant: TenantFixture
) -> None:
    first, second = rsa_key("rsa-1"), rsa_key("rsa-2", index=1)
    with fake_provider([first, second]) as provider:
        async with oidc_client(database_url, tmp_path, provider) as client:
            for key in (first, second):
                named = provider.sign(provider.claims(EMAIL), key)
                assert (await call(client, tenant, named)).status_code == 200
                unnamed = provider.sign(provider.claims(EMAIL), key, kid=None)
                assert (await call(client, tenant, unnamed)).status_code == 401


async def test_keys_are_cached(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider
) -> None:
    for _ in range(3):
        assert (await call(client, tenant, idp.sign(idp.claims(EMAIL)))).status_code == 200
    assert (idp.discovery_requests, idp.jwks_requests) == (1, 1)


async def test_concurrent_first_requests_share_one_fetch(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider
) -> None:
    token = idp.sign(idp.claims(EMAIL))
    responses = await asyncio.gather(*(call(client, tenant, token) for _ in range(8)))
    assert [response.status_code for response in responses] == [200] * 8
    assert (idp.discovery_requests, idp.jwks_requests) == (1, 1)


async def test_rotation_is_picked_up_by_one_refresh(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider
) -> None:
    assert (await call(client, tenant, idp.sign(idp.claims(EMAIL)))).status_code == 200
    rotated = rsa_key("key-2", index=1)
    idp.keys.append(rotated)
    response = await call(client, tenant, idp.sign(idp.claims(EMAIL), rotated))
    assert response.status_code == 200, response.text
    assert idp.jwks_requests == 2


async def test_unknown_kids_refresh_at_most_once_per_interval(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider
) -> None:
    assert (await call(client, tenant, idp.sign(idp.claims(EMAIL)))).status_code == 200
    stranger = rsa_key("made-up", index=1)
    for attempt in range(3):
        token = idp.sign(idp.claims(EMAIL), stranger, kid=f"made-up-{attempt}")
        assert (await call(client, tenant, token)).status_code == 401
    # One refresh for the first unknown kid; the others fall inside the interval.
    assert idp.jwks_requests == 2


async def test_provider_down_before_keys_are_known_is_503_then_recovers(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider
) -> None:
    idp.available = False
    down = await call(client, tenant, idp.sign(idp.claims(EMAIL)))
    assert down.status_code == 503
    assert down.json()["code"] == "IDENTITY_PROVIDER_UNAVAILABLE"
    assert int(down.headers["Retry-After"]) > 0
    idp.available = True
    assert (await call(client, tenant, idp.sign(idp.claims(EMAIL)))).status_code == 200


async def test_known_keys_outlive_a_provider_outage(
    database: Database, database_url: str, tmp_path: Path, tenant: TenantFixture
) -> None:
    with fake_provider([rsa_key("key-1")]) as provider:
        async with oidc_client(
            database_url, tmp_path, provider, oidc_jwks_cache_seconds=0
        ) as client:
            assert (
                await call(client, tenant, provider.sign(provider.claims(EMAIL)))
            ).status_code == 200
            provider.available = False
            again = await call(client, tenant, provider.sign(provider.claims(EMAIL)))
            assert again.status_code == 200, again.text


async def test_key_fetches_share_one_connection_closed_at_shutdown(
    database: Database, database_url: str, tmp_path: Path, tenant: TenantFixture
) -> None:
    with fake_provider([rsa_key("key-1")]) as provider:
        assert provider.server is not None
        # Keys that never stay fresh: every request reads discovery and keys again.
        async with oidc_client(
            database_url, tmp_path, provider, oidc_jwks_cache_seconds=0
        ) as client:
            for _ in range(3):
                token = provider.sign(provider.claims(EMAIL))
                assert (await call(client, tenant, token)).status_code == 200
            assert (provider.discovery_requests, provider.jwks_requests) == (3, 3)
            assert provider.server.connections == 1
            assert provider.server.open_connections == 1
        # The app's shutdown closed the pooled client and with it the connection.
        assert provider.server.wait_until_closed()


async def test_discovery_naming_another_issuer_is_not_trusted(
    client: httpx.AsyncClient, tenant: TenantFixture, idp: FakeProvider
) -> None:
    idp.announced_issuer = "https://idp.evil.example.com"
    response = await call(client, tenant, idp.sign(idp.claims(EMAIL, iss=idp.announced_issuer)))
    assert response.status_code == 503
    assert idp.jwks_requests == 0


def test_issuer_without_audience_is_a_configuration_error(
    database_url: str, tmp_path: Path
) -> None:
    settings = make_settings(database_url, tmp_path, oidc_issuer="https://idp.example.com")
    with pytest.raises(ValueError, match="OIDC_AUDIENCE"):
        create_app(settings)


@pytest.mark.parametrize(
    "issuer", ["http://idp.example.com", "ftp://idp.example.com", "idp.example.com"]
)
def test_issuer_must_be_https_unless_loopback(
    database_url: str, tmp_path: Path, issuer: str
) -> None:
    settings = make_settings(database_url, tmp_path, oidc_issuer=issuer, oidc_audience="x")
    with pytest.raises(ValueError, match="https"):
        create_app(settings)


async def test_without_oidc_configured_tokens_are_401(
    database: Database, database_url: str, tmp_path: Path, tenant: TenantFixture
) -> None:
    with fake_provider([rsa_key("key-1")]) as provider:
        settings = make_settings(database_url, tmp_path)
        async with running_app(settings) as app, api_client(app) as client:
            response = await call(client, tenant, provider.sign(provider.claims(EMAIL)))
    assert response.status_code == 401
    assert provider.discovery_requests == 0
