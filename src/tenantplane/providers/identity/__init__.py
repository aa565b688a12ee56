"""Identity: OpenID Connect token verification (the ``TokenVerifier`` of tenantplane/access.py)."""

from __future__ import annotations

from tenantplane.config import Settings
from tenantplane.providers.identity.keys import KeyCache, ProviderUnavailable
from tenantplane.providers.identity.oidc import OidcVerifier

__all__ = ["KeyCache", "OidcVerifier", "ProviderUnavailable", "build_token_verifier"]


def build_token_verifier(settings: Settings) -> OidcVerifier | None:
    """The verifier for TENANTPLANE_OIDC_ISSUER, or None when OIDC is not configured.

    Nothing is fetched here: the discovery document and keys are read on first use, so the
    API starts even while the provider is down (API keys keep working).
    """
    if not settings.oidc_issuer:
        return None
    if not settings.oidc_audience:
        raise ValueError(
            "TENANTPLANE_OIDC_AUDIENCE is required with TENANTPLANE_OIDC_ISSUER: without it, "
            "tokens the provider issued to any other application would be accepted"
        )
    keys = KeyCache(
        settings.oidc_issuer,
        timeout=settings.oidc_http_timeout_seconds,
        max_age=settings.oidc_jwks_cache_seconds,
        min_refresh_interval=settings.oidc_jwks_min_refresh_seconds,
    )
    return OidcVerifier(keys, audience=settings.oidc_audience, leeway=settings.oidc_leeway_seconds)
