"""Verification of OpenID Connect identity tokens (JWTs) with PyJWT.

The order of checks is deliberate: the header's algorithm is checked against the
asymmetric algorithms the provider announces before any key is chosen, the key is chosen by
``kid`` (or is the single suitable key when the token names none), and only then is the
signature verified together with iss, aud, exp, nbf and iat. See docs/oidc.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jwt
import structlog

from tenantplane.emails import InvalidEmail, normalise_email
from tenantplane.http.errors import ServiceUnavailable, Unauthenticated
from tenantplane.providers.identity.keys import (
    ASYMMETRIC_ALGORITHMS,
    KeyCache,
    ProviderKeys,
    ProviderUnavailable,
)

log = structlog.get_logger(__name__)

# Far above any real ID token; refuses to parse megabytes of attacker-chosen base64.
MAX_TOKEN_LENGTH = 16 * 1024
REQUIRED_CLAIMS = ["iss", "aud", "exp", "iat"]

_REASONS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "token expired"),
    (jwt.ImmatureSignatureError, "token not yet valid"),
    (jwt.InvalidAudienceError, "token audience not accepted"),
    (jwt.InvalidIssuerError, "token issuer not accepted"),
    (jwt.MissingRequiredClaimError, "token lacks a required claim"),
    (jwt.InvalidSignatureError, "token signature invalid"),
)


class OidcVerifier:
    """A ``TokenVerifier``: an identity token in, the verified, normalised email out."""

    def __init__(self, keys: KeyCache, *, audience: str, leeway: float) -> None:
        self.keys = keys
        self.audience = audience
        self.leeway = leeway

    async def aclose(self) -> None:
        await self.keys.aclose()

    async def verify(self, token: str) -> str:
        algorithm, kid = _header(token)
        provider = await self._provider_keys()
        if algorithm not in provider.algorithms:
            raise Unauthenticated("token algorithm not accepted")
        key = _select_key(provider, algorithm, kid)
        if key is None and kid is not None:
            provider = await self.keys.refresh_for_unknown_kid(provider)
            key = _select_key(provider, algorithm, kid)
        if key is None:
            raise Unauthenticated("token signing key unknown")
        claims = self._decode(token, key, algorithm, provider.issuer)
        return _verified_email(claims)

    async def _provider_keys(self) -> ProviderKeys:
        try:
            return await self.keys.current()
        except ProviderUnavailable as exc:
            log.warning("identity provider unavailable", error=str(exc))
            raise ServiceUnavailable(
                "the identity provider cannot be reached to verify the token",
                code="IDENTITY_PROVIDER_UNAVAILABLE",
            ) from exc

    def _decode(
        self, token: str, key: Mapping[str, Any], algorithm: str, issuer: str
    ) -> dict[str, Any]:
        try:
            public_key = jwt.PyJWK(dict(key), algorithm=algorithm)
            claims: dict[str, Any] = jwt.decode(
                token,
                key=public_key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=issuer,
                leeway=self.leeway,
                options={"require": REQUIRED_CLAIMS},
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(_reason(exc)) from None
        _check_authorized_party(claims, self.audience)
        return claims


def _header(token: str) -> tuple[str, str | None]:
    if len(token) > MAX_TOKEN_LENGTH:
        raise Unauthenticated("token too long")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Unauthenticated("invalid token") from None
    algorithm = header.get("alg")
    if not isinstance(algorithm, str) or algorithm not in ASYMMETRIC_ALGORITHMS:
        raise Unauthenticated("token algorithm not accepted")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise Unauthenticated("invalid token")
    return algorithm, kid


def _select_key(
    provider: ProviderKeys, algorithm: str, kid: str | None
) -> Mapping[str, Any] | None:
    """The key named by ``kid``; without a kid, the provider's only suitable key.

    Some providers (oidc-provider-mock 0.3 among them) sign without a kid. With a single
    suitable key there is nothing to choose; with several, guessing would mean trying
    signatures against each, so such a token is refused.
    """
    candidates = provider.candidates(algorithm)
    if kid is not None:
        named = [key for key in candidates if key.get("kid") == kid]
        return named[0] if len(named) == 1 else None
    return candidates[0] if len(candidates) == 1 else None


def _check_authorized_party(claims: Mapping[str, Any], audience: str) -> None:
    """OIDC Core 3.1.3.7: with several audiences, azp must name this client."""
    aud = claims.get("aud")
    if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != audience:
        raise Unauthenticated("token audience not accepted")


def _verified_email(claims: Mapping[str, Any]) -> str:
    email = claims.get("email")
    if not isinstance(email, str) or not email:
        raise Unauthenticated("token carries no email")
    # Some providers (Cognito) send the boolean as a string.
    verified = claims.get("email_verified")
    if verified is not True and verified != "true":
        raise Unauthenticated("token email is not verified")
    try:
        return normalise_email(email)
    except InvalidEmail:
        raise Unauthenticated("token email is not a valid address") from None


def _reason(exc: jwt.PyJWTError) -> str:
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            return reason
    return "invalid token"
