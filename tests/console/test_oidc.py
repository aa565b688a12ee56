"""The console's OIDC client takes the provider's endpoints from the verifier's cached
discovery document, and never sends a code (with its client secret) over plain HTTP off
this machine."""

from __future__ import annotations

import pytest

from tenantplane.console.oidc import AuthorizationRequest, OidcClient
from tenantplane.providers.identity.keys import KeyCache, ProviderKeys, ProviderUnavailable

ISSUER = "https://idp.example.com"


class CachedDiscovery(KeyCache):
    """A key cache already holding the provider's discovery document (nothing fetched)."""

    def __init__(self, keys: ProviderKeys) -> None:
        super().__init__(ISSUER, timeout=1, max_age=3600, min_refresh_interval=60)
        self.loaded = keys

    async def current(self) -> ProviderKeys:
        return self.loaded


def provider(authorization: str | None, token: str | None) -> CachedDiscovery:
    return CachedDiscovery(ProviderKeys(ISSUER, frozenset({"RS256"}), (), authorization, token))


async def test_the_authorization_request_goes_to_the_discovered_endpoint() -> None:
    client = OidcClient(provider(f"{ISSUER}/authorize", f"{ISSUER}/token"), "console", None)
    url = await client.authorization_url(AuthorizationRequest.new(), "state", "https://c/cb")
    assert url.startswith(f"{ISSUER}/authorize?response_type=code&client_id=console&")
    assert "code_challenge_method=S256" in url


@pytest.mark.parametrize(
    ("authorization", "token"),
    [
        (f"{ISSUER}/authorize", "http://idp.example.com/token"),  # plain HTTP off loopback
        (f"{ISSUER}/authorize", None),  # no token endpoint
    ],
)
async def test_an_unusable_token_endpoint_is_never_called(
    authorization: str, token: str | None
) -> None:
    client = OidcClient(provider(authorization, token), "console", "secret")
    with pytest.raises(ProviderUnavailable):
        await client.exchange("code", "verifier", "https://console.example.com/cb")


async def test_a_plain_http_authorization_endpoint_off_loopback_is_refused() -> None:
    client = OidcClient(provider("http://idp.example.com/authorize", None), "console", None)
    with pytest.raises(ProviderUnavailable):
        await client.authorization_url(AuthorizationRequest.new(), "state", "https://c/cb")
