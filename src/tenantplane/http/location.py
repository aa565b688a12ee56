"""Location of a created resource: an absolute URL, from the scheme and host the client used.

The scheme is the connection's, or X-Forwarded-Proto from a peer in TENANTPLANE_TRUSTED_PROXIES
(uvicorn's middleware); the host is the Host header, or X-Forwarded-Host from such a peer
(http/proxy.py). An untrusted client can name only the host it sent the request to, which is
its own business. Stored answers (Idempotency-Key) keep the Location without its origin, and a
replay puts back the origin of the repeat: a retry through another address is told the address
it can reach.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import Response

# RFC 3986 pchar besides unreserved characters: what a path segment may hold as is.
SEGMENT_SAFE = "!$&'()*+,;=:@"


def origin_of(request: Request) -> str:
    url = request.url
    return f"{url.scheme}://{url.netloc}"


def set_location(request: Request, response: Response, *segments: str) -> None:
    """Location: the request's own URL without its query, and ``segments`` below it: a POST
    to a collection names the item it made, a PUT that created names itself (none)."""
    path = request.url.path.rstrip("/") + "".join(f"/{segment}" for segment in segments)
    response.headers["Location"] = origin_of(request) + quote(path, safe="/" + SEGMENT_SAFE)


def without_origin(location: str) -> str:
    """The path (and query) of an absolute Location, as a stored answer keeps it."""
    parts = urlsplit(location)
    if not parts.scheme:
        return location
    return urlunsplit(("", "", parts.path, parts.query, parts.fragment))


def with_origin(request: Request, location: str) -> str:
    """A stored Location made absolute again for ``request``; others (stored before
    Locations were absolute) as they were."""
    return origin_of(request) + location if location.startswith("/") else location
