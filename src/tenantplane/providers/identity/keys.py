"""The identity provider's discovery document and signing keys, fetched and cached.

Fetched with httpx's async client, so a fetch never blocks the event loop, through one
pooled client for the life of the process. One lock per cache makes concurrent requests
share a fetch instead of stampeding the provider.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import structlog

from tenantplane.providers.http_pool import PooledClient

log = structlog.get_logger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"

# Signature algorithms accepted at all: asymmetric only. HMAC ("HS*") would let anyone who
# knows the provider's public key forge tokens; "none" would let anyone forge them.
ASYMMETRIC_ALGORITHMS: Mapping[str, tuple[str, str | None]] = {
    # algorithm: (JWK kty, JWK crv)
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}
# OpenID Connect Discovery: RS256 is the algorithm every provider must support.
DEFAULT_ALGORITHMS = frozenset({"RS256"})


class ProviderUnavailable(Exception):
    """The provider's discovery document or key set could not be read."""


@dataclass(frozen=True)
class ProviderKeys:
    issuer: str
    algorithms: frozenset[str]
    keys: tuple[Mapping[str, Any], ...]
    # Where a client (the console's sign-in) sends the browser, and exchanges the code.
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None

    def candidates(self, algorithm: str) -> list[Mapping[str, Any]]:
        """Signing keys that can verify ``algorithm`` (by kty, crv, use and alg)."""
        kty, crv = ASYMMETRIC_ALGORITHMS[algorithm]
        return [
            key
            for key in self.keys
            if key.get("kty") == kty
            and (crv is None or key.get("crv") == crv)
            and key.get("use", "sig") == "sig"
            and key.get("alg", algorithm) == algorithm
        ]


def check_transport(url: str, what: str) -> None:
    """HTTPS, or plain HTTP to this machine only (a development or test provider)."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and _is_loopback(parts.hostname):
        return
    raise ValueError(f"{what} must be an https URL (http is accepted for loopback only): {url}")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


class KeyCache:
    """Discovery document and JWKS of one issuer.

    Re-read when older than ``max_age``; re-read early when a token names an unknown key id
    (the provider rotated its keys), at most once per ``min_refresh_interval`` so that tokens
    with made-up key ids cannot turn this service into a request amplifier against the
    provider. When the provider is unreachable, keys already loaded stay in use.
    """

    def __init__(
        self,
        issuer: str,
        *,
        timeout: float,
        max_age: float,
        min_refresh_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_transport(issuer, "TENANTPLANE_OIDC_ISSUER")
        self.issuer = issuer
        # Redirects are not followed: the discovery document and keys come from the issuer.
        self.http = PooledClient(timeout=timeout, follow_redirects=False)
        self.max_age = max_age
        self.min_refresh_interval = min_refresh_interval
        self.clock = clock
        self._keys: ProviderKeys | None = None
        self._loaded_at = 0.0
        self._forced_at: float | None = None
        self._failed_at: float | None = None
        self._lock = asyncio.Lock()

    async def current(self) -> ProviderKeys:
        keys = self._keys
        if keys is not None and not self._expired():
            return keys
        async with self._lock:
            if self._keys is not None:
                if self._keys is not keys or not self._expired():
                    return self._keys  # another request loaded them while this one waited
                if self._within_interval(self._failed_at):
                    return self._keys  # the provider failed moments ago: keep stale keys
            return await self._load()

    async def refresh_for_unknown_kid(self, seen: ProviderKeys) -> ProviderKeys:
        async with self._lock:
            if self._keys is not None and self._keys is not seen:
                return self._keys
            if self._within_interval(self._forced_at):
                return seen
            self._forced_at = self.clock()
            return await self._load()

    async def aclose(self) -> None:
        await self.http.aclose()

    def _expired(self) -> bool:
        return self.clock() - self._loaded_at >= self.max_age

    def _within_interval(self, moment: float | None) -> bool:
        return moment is not None and self.clock() - moment < self.min_refresh_interval

    async def _load(self) -> ProviderKeys:
        try:
            keys = await self._fetch()
        except ProviderUnavailable:
            self._failed_at = self.clock()
            if self._keys is None:
                raise
            log.warning("identity provider unreachable; using cached keys", exc_info=True)
            return self._keys
        self._keys, self._loaded_at, self._failed_at = keys, self.clock(), None
        return keys

    async def _fetch(self) -> ProviderKeys:
        http = self.http.client
        discovery = await _get_json(http, self.issuer.rstrip("/") + DISCOVERY_PATH)
        issuer = discovery.get("issuer")
        if not isinstance(issuer, str) or not _same_issuer(issuer, self.issuer):
            raise ProviderUnavailable(
                f"discovery document names issuer {issuer!r}, expected {self.issuer!r}"
            )
        jwks_uri = discovery.get("jwks_uri")
        if not isinstance(jwks_uri, str):
            raise ProviderUnavailable("discovery document has no jwks_uri")
        try:
            check_transport(jwks_uri, "jwks_uri")
        except ValueError as exc:
            raise ProviderUnavailable(str(exc)) from exc
        jwks = await _get_json(http, jwks_uri)
        raw_keys = jwks.get("keys")
        if not isinstance(raw_keys, list):
            raise ProviderUnavailable("JWKS has no keys array")
        keys = tuple(key for key in raw_keys if isinstance(key, dict))
        log.info("identity provider keys loaded", issuer=issuer, keys=len(keys))
        return ProviderKeys(
            issuer=issuer,
            algorithms=_algorithms(discovery),
            keys=keys,
            authorization_endpoint=_text(discovery.get("authorization_endpoint")),
            token_endpoint=_text(discovery.get("token_endpoint")),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _algorithms(discovery: Mapping[str, Any]) -> frozenset[str]:
    listed = discovery.get("id_token_signing_alg_values_supported")
    if not isinstance(listed, list):
        return DEFAULT_ALGORITHMS
    return frozenset(alg for alg in listed if alg in ASYMMETRIC_ALGORITHMS)


async def _get_json(http: httpx.AsyncClient, url: str) -> dict[str, Any]:
    try:
        response = await http.get(url, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise ProviderUnavailable(f"GET {url} failed: {exc}") from exc
    if response.status_code != 200:
        raise ProviderUnavailable(f"GET {url} answered {response.status_code}")
    try:
        body = response.json()
    except ValueError as exc:
        raise ProviderUnavailable(f"GET {url} did not return JSON") from exc
    if not isinstance(body, dict):
        raise ProviderUnavailable(f"GET {url} did not return a JSON object")
    return body
