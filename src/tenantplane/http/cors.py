"""Cross-origin requests (CORS), off unless ``TENANTPLANE_CORS_ORIGINS`` names origins.

A browser application on one of those exact origins may call the API with a bearer token: the
request headers the API reads are allowed and the response headers a client needs are exposed.
No cookies are used, so credentials mode stays off; no origin pattern or ``*`` is accepted.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from tenantplane.http.request_id import REQUEST_ID_HEADER

ALLOWED_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
ALLOWED_HEADERS = [
    "Authorization",
    "Content-Type",
    "If-Match",
    "If-None-Match",
    "Idempotency-Key",
    REQUEST_ID_HEADER,
]
EXPOSED_HEADERS = [
    "ETag",
    "Location",
    "Retry-After",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Idempotent-Replayed",
    REQUEST_ID_HEADER,
]
# How long a browser may keep a preflight's answer.
PREFLIGHT_MAX_AGE_SECONDS = 600


def check_origin(value: str) -> str:
    """An exact origin as browsers send it: scheme://host[:port], nothing else."""
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or "*" in value
        or parts.path
        or parts.query
        or parts.fragment
        or parts.username is not None
        or value != value.lower()
    ):
        raise ValueError(
            f"{value!r} is not an origin: scheme://host[:port] in lower case, no path, no wildcard"
        )
    return value


def install_cors(app: FastAPI, origins: list[str]) -> None:
    if not origins:
        return
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_methods=ALLOWED_METHODS,
        allow_headers=ALLOWED_HEADERS,
        expose_headers=EXPOSED_HEADERS,
        allow_credentials=False,
        max_age=PREFLIGHT_MAX_AGE_SECONDS,
    )
