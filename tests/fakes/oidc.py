"""A loopback OpenID provider whose keys and answers the tests control.

It serves what a relying party reads from a provider (OpenID Connect Discovery 1.0: the
discovery document at ``/.well-known/openid-configuration``, the JWK Set at its
``jwks_uri``), and signs tokens locally with the same keys, so the tests can make the edge
cases a real provider never issues: expired, wrong audience or issuer, ``alg: none``,
HS256 keyed with the public key, unknown ``kid``, unverified email.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from tests.fakes.server import LoopbackServer, QuietHandler, serving

AUDIENCE = "tenantplane-fake-client"


@dataclass(frozen=True)
class SigningKey:
    kid: str
    algorithm: str
    private: Any

    def public_jwk(self) -> dict[str, Any]:
        exporter = RSAAlgorithm if self.algorithm.startswith(("RS", "PS")) else ECAlgorithm
        jwk: dict[str, Any] = exporter.to_jwk(self.private.public_key(), as_dict=True)
        jwk.update(kid=self.kid, use="sig")
        return jwk


@cache
def _rsa_private_key(index: int) -> rsa.RSAPrivateKey:
    # Generated once per test run: RSA key generation is slow.
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def rsa_key(kid: str, index: int = 0, algorithm: str = "RS256") -> SigningKey:
    return SigningKey(kid, algorithm, _rsa_private_key(index))


def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


@dataclass
class FakeProvider:
    base_url: str
    keys: list[SigningKey]
    algorithms: list[str] = field(default_factory=lambda: ["RS256", "ES256"])
    available: bool = True
    # The issuer the discovery document names (default: the real one).
    announced_issuer: str | None = None
    discovery_requests: int = 0
    jwks_requests: int = 0
    server: LoopbackServer | None = None

    @property
    def issuer(self) -> str:
        return self.base_url

    def claims(self, email: str, /, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": f"user-{email}",
            "aud": AUDIENCE,
            "iat": now,
            "exp": now + 600,
            "email": email,
            "email_verified": True,
        }
        claims.update(overrides)
        return {name: value for name, value in claims.items() if value is not None}

    def sign(
        self,
        claims: dict[str, Any],
        key: SigningKey | None = None,
        *,
        kid: str | None = "default",
        algorithm: str | None = None,
    ) -> str:
        """Sign with ``key`` (default: the first key); ``kid=None`` leaves the kid out and
        ``kid="default"`` uses the key's own."""
        key = key or self.keys[0]
        headers = {} if kid is None else {"kid": key.kid if kid == "default" else kid}
        return jwt.encode(
            claims, key.private, algorithm=algorithm or key.algorithm, headers=headers
        )

    def sign_none(self, claims: dict[str, Any]) -> str:
        """An unsigned token (``alg: none``), with the first key's kid."""
        return _compact({"alg": "none", "typ": "JWT", "kid": self.keys[0].kid}, claims, b"")

    def sign_hs256_with_public_key(self, claims: dict[str, Any]) -> str:
        """The algorithm-confusion attack: HMAC keyed with the provider's public key, which
        anyone can download. PyJWT refuses to build this, so it is built by hand."""
        key = self.keys[0]
        header = {"alg": "HS256", "typ": "JWT", "kid": key.kid}
        secret = key.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        signing_input = _signing_input(header, claims)
        signature = hmac.new(secret, signing_input, hashlib.sha256).digest()
        return f"{signing_input.decode()}.{_b64(signature)}"

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.announced_issuer or self.issuer,
            "jwks_uri": f"{self.base_url}/jwks",
            "id_token_signing_alg_values_supported": self.algorithms,
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.public_jwk() for key in self.keys]}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _signing_input(header: dict[str, Any], claims: dict[str, Any]) -> bytes:
    parts = (json.dumps(header).encode(), json.dumps(claims).encode())
    return ".".join(_b64(part) for part in parts).encode()


def _compact(header: dict[str, Any], claims: dict[str, Any], signature: bytes) -> str:
    return f"{_signing_input(header, claims).decode()}.{_b64(signature)}"


def _handler(provider: FakeProvider) -> type[QuietHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:
            if not provider.available:
                self._answer(503, {"error": "temporarily_unavailable"})
            elif self.path == "/.well-known/openid-configuration":
                provider.discovery_requests += 1
                self._answer(200, provider.discovery())
            elif self.path == "/jwks":
                provider.jwks_requests += 1
                self._answer(200, provider.jwks())
            else:
                self._answer(404, {"error": "not_found"})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@contextmanager
def fake_provider(keys: list[SigningKey] | None = None) -> Iterator[FakeProvider]:
    provider = FakeProvider(base_url="", keys=keys or [rsa_key("key-1")])
    with serving(_handler(provider)) as provider.server:
        provider.base_url = provider.server.url
        yield provider
