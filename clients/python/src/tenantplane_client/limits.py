"""How much of an answer the clients read: at most ``max_response_bytes`` (16 MiB unless
told), counted after decompression, checked against Content-Length first and then while
reading, so that a huge or endless answer costs a bounded amount of memory."""

from __future__ import annotations

import httpx

from tenantplane_client.errors import ResponseTooLarge

DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# Headers that described the bytes on the wire, not the buffered (decoded) body.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def check_declared(response: httpx.Response, limit: int) -> None:
    """Refuse before reading when the answer says it is larger than ``limit``."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(response.request.method, response.request.url.path, limit)


def check_received(response: httpx.Response, received: int, limit: int) -> None:
    if received > limit:
        raise ResponseTooLarge(response.request.method, response.request.url.path, limit)


def buffered(response: httpx.Response, content: bytes) -> httpx.Response:
    """The streamed answer as an ordinary response holding ``content`` (already decoded)."""
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _WIRE_HEADERS]
    return httpx.Response(
        response.status_code, headers=headers, content=content, request=response.request
    )
