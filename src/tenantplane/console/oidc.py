"""Members' sign-in: the OpenID Connect authorization code flow with PKCE (RFC 7636, S256).

The ID token the provider returns is verified by the API's own verifier (signature, issuer,
audience, expiry: docs/oidc.md), then its nonce against the one this sign-in sent. The token
exchange is one form POST; it is written here rather than through an OAuth client library
because the usual one refuses plain-HTTP issuers unless a process-wide environment switch is
set, and loopback issuers (tests, a local provider) are plain HTTP.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from urllib.parse import urlencode

import httpx
import jwt

from tenantplane.http.errors import Unauthenticated
from tenantplane.providers.identity.keys import KeyCache, ProviderUnavailable, check_transport


@dataclass(frozen=True)
class AuthorizationRequest:
    nonce: str
    code_verifier: str

    @classmethod
    def new(cls) -> AuthorizationRequest:
        return cls(nonce=secrets.token_urlsafe(24), code_verifier=secrets.token_urlsafe(64))

    @property
    def code_challenge(self) -> str:
        digest = hashlib.sha256(self.code_verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class OidcClient:
    """The console as a client of the configured issuer, whose discovery document it reads
    from the API's verifier's cache (providers/identity/keys.py), never once more per
    sign-in; the endpoints must be HTTPS (or loopback), as the key set's is."""

    def __init__(self, keys: KeyCache, client_id: str, client_secret: str | None) -> None:
        self.keys = keys
        self.client_id = client_id
        self.client_secret = client_secret

    async def _endpoint(self, name: str) -> str:
        """``authorization_endpoint`` or ``token_endpoint``; ProviderUnavailable when the
        provider names none, or one this service must not use."""
        provider = await self.keys.current()
        url: str | None = getattr(provider, name)
        if url is None:
            raise ProviderUnavailable(f"discovery document has no {name}")
        try:
            check_transport(url, name)
        except ValueError as exc:
            raise ProviderUnavailable(str(exc)) from exc
        return url

    async def authorization_url(
        self, request: AuthorizationRequest, state: str, redirect_uri: str
    ) -> str:
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": redirect_uri,
                "scope": "openid email",
                "state": state,
                "nonce": request.nonce,
                "code_challenge": request.code_challenge,
                "code_challenge_method": "S256",
            }
        )
        return f"{await self._endpoint('authorization_endpoint')}?{query}"

    async def exchange(self, code: str, code_verifier: str, redirect_uri: str) -> str:
        """The ID token the code is exchanged for."""
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": self.client_id,
            "code_verifier": code_verifier,
        }
        if self.client_secret is not None:
            form["client_secret"] = self.client_secret
        endpoint = await self._endpoint("token_endpoint")
        try:
            answer = await self.keys.http.client.post(endpoint, data=form)
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"POST {endpoint} failed: {exc}") from exc
        if answer.status_code != 200:
            raise Unauthenticated("the identity provider refused the sign-in")
        token = answer.json().get("id_token")
        if not isinstance(token, str):
            raise Unauthenticated("the identity provider returned no ID token")
        return token


def nonce_of(id_token: str) -> str | None:
    """The nonce claim of an ID token already verified (signature, issuer, audience)."""
    claims = jwt.decode(id_token, options={"verify_signature": False})
    nonce = claims.get("nonce")
    return nonce if isinstance(nonce, str) else None
