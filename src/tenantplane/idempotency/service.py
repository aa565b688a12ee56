"""What a request under an Idempotency-Key gets: its own execution, a replay, or a refusal.

The key's syntax is the IETF httpapi draft's (an sf-string, ``"…"``); the bare form many
clients send is accepted too and names the same key. The rules: docs/api.md#idempotency-key.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timedelta

from cryptography.fernet import Fernet, InvalidToken
from starlette.responses import Response

from tenantplane.http.errors import ApiError, Conflict
from tenantplane.http.location import without_origin
from tenantplane.idempotency.models import IdempotencyRecord
from tenantplane.idempotency.repository import IdempotencyRepository
from tenantplane.keys import KeyRing, Purpose

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 255
RETENTION = timedelta(hours=24)
# The headers of a first response that a replay repeats (the rest are made per response).
REPLAYED_HEADERS = ("content-type", "etag", "location", "cache-control")


class InvalidIdempotencyKey(ApiError):
    def __init__(self, reason: str) -> None:
        super().__init__(
            400,
            f"invalid Idempotency-Key header: {reason}",
            code="INVALID_IDEMPOTENCY_KEY",
            field=HEADER,
        )


class IdempotencyKeyReused(ApiError):
    def __init__(self) -> None:
        super().__init__(
            422,
            "this Idempotency-Key was used for a different request (method, path or body); "
            "use a new key for a new request",
            code="IDEMPOTENCY_KEY_REUSED",
            field=HEADER,
        )


def key_in_flight() -> Conflict:
    return Conflict(
        "a request with this Idempotency-Key is still being processed; retry shortly",
        code="IDEMPOTENCY_KEY_IN_FLIGHT",
        field=HEADER,
    )


class Replay(ApiError):
    """The stored first response, answered again.

    An ApiError so that the one error handler answers it from wherever it is raised (a
    dependency, before the route runs); it is not an error for the client.
    """

    def __init__(self, stored: Response) -> None:
        super().__init__(stored.status_code, "replayed")
        self.stored = stored

    def response(self) -> Response:  # type: ignore[override]
        return self.stored


def _unquote(value: str) -> str:
    inner = value[1:-1]
    key = []
    escaped = False
    for char in inner:
        if escaped:
            if char not in '"\\':
                raise InvalidIdempotencyKey('only \\" and \\\\ may be escaped in a quoted key')
            key.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            raise InvalidIdempotencyKey("a quote inside a quoted key must be escaped")
        else:
            key.append(char)
    if escaped:
        raise InvalidIdempotencyKey("the quoted key ends in an escape")
    return "".join(key)


def parse_key(header: str) -> str:
    """The key named by the header: an sf-string (``"abc"``) or a bare token (``abc``)."""
    value = header.strip(" \t")
    if any(not (0x20 <= ord(char) <= 0x7E) for char in value):
        raise InvalidIdempotencyKey("only printable ASCII characters are allowed")
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        key = _unquote(value)
    elif '"' in value or " " in value or "\\" in value:
        raise InvalidIdempotencyKey('a key with spaces, quotes or backslashes must be "quoted"')
    else:
        key = value
    if not key:
        raise InvalidIdempotencyKey("the key is empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidIdempotencyKey(f"the key is longer than {MAX_KEY_LENGTH} characters")
    return key


def fingerprint(principal: str, method: str, path: str, body: bytes) -> str:
    """The request's identity: who sends it, and what (JSON bodies compare by content, not by
    spacing or key order). A key is its principal's: another principal's repeat is a
    different request (422), never a replay of an answer that was not its own."""
    try:
        canonical = json.dumps(
            json.loads(body), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        ).encode()
    except ValueError:
        canonical = body
    digest = hashlib.sha256(f"{principal}\n{method} {path}\n".encode())
    digest.update(canonical)
    return digest.hexdigest()


def _fernet(keys: KeyRing, derivation: str) -> Fernet | None:
    root = keys.find(derivation)
    if root is None:
        return None
    return Fernet(base64.urlsafe_b64encode(root.key(Purpose.idempotent_responses)))


def make_record(
    keys: KeyRing,
    *,
    tenant_id: int,
    key: str,
    request_fingerprint: str,
    response: Response,
    now: datetime,
) -> IdempotencyRecord:
    headers = {
        name: response.headers[name] for name in REPLAYED_HEADERS if name in response.headers
    }
    if "location" in headers:
        # The repeat may come through another address: its replay gets its own origin.
        headers["location"] = without_origin(headers["location"])
    current = keys.current
    fernet = _fernet(keys, current.derivation)
    assert fernet is not None  # the current key is always in the ring
    return IdempotencyRecord(
        tenant_id=tenant_id,
        key=key,
        fingerprint=request_fingerprint,
        status_code=response.status_code,
        headers=headers,
        body=fernet.encrypt(bytes(response.body)),
        key_derivation=current.derivation,
        created_at=now,
        expires_at=now + RETENTION,
    )


def replayed_response(
    keys: KeyRing, record: IdempotencyRecord, origin: str = ""
) -> Response | None:
    """The stored response, or None when no key of the ring can read it any more; a stored
    Location's path is put below ``origin`` (the repeat's scheme and host)."""
    fernet = _fernet(keys, record.key_derivation)
    if fernet is None:
        return None
    try:
        body = fernet.decrypt(record.body)
    except InvalidToken:
        return None
    response = Response(content=body, status_code=record.status_code)
    for name, value in record.headers.items():
        response.headers[name] = value
    location = record.headers.get("location", "")
    if location.startswith("/"):
        response.headers["location"] = origin + location
    response.headers[REPLAYED_HEADER] = "true"
    return response


async def claim(
    repository: IdempotencyRepository,
    keys: KeyRing,
    *,
    tenant_id: int,
    key: str,
    request_fingerprint: str,
    now: datetime,
    origin: str = "",
) -> None:
    """Make this request the one that runs under the key, or raise what answers it instead:
    409 while another holds the key, 422 for a different request, the replay for a repeat
    (its Location under ``origin``, the repeat's scheme and host)."""
    if not await repository.try_lock(tenant_id, key):
        raise key_in_flight()
    await repository.purge_expired(tenant_id, now)
    record = await repository.get(tenant_id, key)
    if record is None:
        return
    if record.fingerprint != request_fingerprint:
        raise IdempotencyKeyReused()
    stored = replayed_response(keys, record, origin)
    if stored is None:
        # Made under a secret key since retired: it cannot be replayed, so the key is free.
        await repository.session.delete(record)
        await repository.session.flush()
        return
    raise Replay(stored)
