"""A real OpenID provider on loopback: oidc-provider-mock (0.3 line), run in a thread.

Tokens are obtained the way a client application obtains them: the user's claims are set
through the mock's ``PUT /users/{sub}``, the authorization endpoint is answered with the
subject (the mock's login form), and the code is exchanged at the token endpoint. The
resulting ID token is signed with RS256 and carries no ``kid`` (see docs/oidc.md).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qs, quote, urlsplit

import httpx

# The mock is plain HTTP on loopback; authlib refuses that unless told otherwise.
os.environ.setdefault("AUTHLIB_INSECURE_TRANSPORT", "1")

# Imported first: it installs an "always" filter for its warnings, which ours must follow.
import authlib.deprecate  # type: ignore[import-untyped]

with warnings.catch_warnings():
    # authlib warns about its own deprecated modules, which the mock imports.
    warnings.simplefilter("ignore", authlib.deprecate.AuthlibDeprecationWarning)
    import oidc_provider_mock

CLIENT_ID = "tenantplane-tests"
REDIRECT_URI = "http://127.0.0.1/callback"


@dataclass
class MockProvider:
    issuer: str
    audience: str = CLIENT_ID
    _tokens: dict[tuple[str, bool], str] = field(default_factory=dict)

    def id_token(self, email: str, *, verified: bool = True) -> str:
        """An ID token for ``email`` (one per address and verification, reused: valid 1 h)."""
        cached = self._tokens.get((email, verified))
        if cached is None:
            cached = self._tokens[(email, verified)] = self._issue(email, verified)
        return cached

    def _issue(self, email: str, verified: bool) -> str:
        with warnings.catch_warnings():
            # The mock (0.3) uses authlib APIs that authlib now marks deprecated.
            warnings.simplefilter("ignore", DeprecationWarning)
            return self._authorize_and_exchange(email, verified)

    def _authorize_and_exchange(self, email: str, verified: bool) -> str:
        subject = f"{email}|{verified}"
        with httpx.Client(base_url=self.issuer, timeout=10) as http:
            claims = {"email": email, "email_verified": verified}
            http.put(f"/users/{quote(subject, safe='')}", json=claims).raise_for_status()
            authorized = http.post(
                "/oauth2/authorize",
                params={
                    "client_id": self.audience,
                    "redirect_uri": REDIRECT_URI,
                    "response_type": "code",
                    "scope": "openid email",
                },
                data={"sub": subject},
            )
            assert authorized.status_code == 302, authorized.text
            code = parse_qs(urlsplit(authorized.headers["location"]).query)["code"][0]
            exchanged = http.post(
                "/oauth2/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": REDIRECT_URI,
                    "client_id": self.audience,
                    "client_secret": "any",
                },
            )
            exchanged.raise_for_status()
        token: str = exchanged.json()["id_token"]
        return token


@contextmanager
def mock_provider() -> Iterator[MockProvider]:
    with oidc_provider_mock.run_server_in_thread() as server:
        # The mock names itself after the Host it is reached by; "localhost" is what it binds.
        yield MockProvider(issuer=f"http://localhost:{server.server_port}")
