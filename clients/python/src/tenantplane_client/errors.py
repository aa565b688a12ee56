"""The errors the SDK raises: the API's envelope, or a failure to reach the API at all."""

from __future__ import annotations

import enum
from typing import Any

import httpx

# The statuses the spec calls retryable (412 is retried by update() with a fresh read).
RETRYABLE_STATUSES = frozenset({429, 500, 503})


class ErrorKind(enum.StrEnum):
    """What went wrong, by the answer's status: the spec's ``code`` is finer but absent
    from 401 and 403 answers (they say nothing about the resource to a stranger), so
    callers branch on this instead of parsing the message."""

    unauthenticated = "unauthenticated"  # 401
    forbidden = "forbidden"  # 403
    not_found = "not_found"  # 404
    conflict = "conflict"  # 409
    precondition_failed = "precondition_failed"  # 412
    invalid = "invalid"  # 400, 413, 415, 422: the request as sent cannot be accepted
    rate_limited = "rate_limited"  # 429
    server_error = "server_error"  # 500 and other 5xx not listed
    unavailable = "unavailable"  # 502, 503, 504
    other = "other"  # any other status

    @classmethod
    def of(cls, status: int) -> ErrorKind:
        kind = _KINDS.get(status)
        if kind is not None:
            return kind
        return cls.server_error if status >= 500 else cls.other


_KINDS = {
    401: ErrorKind.unauthenticated,
    403: ErrorKind.forbidden,
    404: ErrorKind.not_found,
    409: ErrorKind.conflict,
    412: ErrorKind.precondition_failed,
    400: ErrorKind.invalid,
    413: ErrorKind.invalid,
    415: ErrorKind.invalid,
    422: ErrorKind.invalid,
    429: ErrorKind.rate_limited,
    502: ErrorKind.unavailable,
    503: ErrorKind.unavailable,
    504: ErrorKind.unavailable,
}


class TenantplaneError(Exception):
    """Every error the SDK raises."""


class ApiError(TenantplaneError):
    """An error answered by the API, in its envelope (`error`, `code`, `field`, …)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        field: str | None = None,
        severity: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.field = field
        self.severity = severity
        self.request_id = request_id
        self.retry_after = retry_after

    @property
    def kind(self) -> ErrorKind:
        return ErrorKind.of(self.status)

    @property
    def retryable(self) -> bool:
        return self.status in RETRYABLE_STATUSES

    def __str__(self) -> str:
        parts = [f"{self.status}", self.kind.value]
        if self.code:
            parts.append(self.code)
        text = " ".join(parts) + f": {self.message}"
        if self.field:
            text += f" (field: {self.field})"
        return text

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        envelope: dict[str, Any] = {}
        try:
            parsed = response.json()
            if isinstance(parsed, dict):
                envelope = parsed
        except ValueError:
            pass
        message = envelope.get("message") or envelope.get("error") or response.reason_phrase
        return cls(
            response.status_code,
            str(message),
            code=envelope.get("code"),
            field=envelope.get("field"),
            severity=envelope.get("severity"),
            request_id=response.headers.get("X-Request-Id"),
            retry_after=retry_after_seconds(response),
        )


class ConnectionFailed(TenantplaneError):
    """The API could not be reached, or the connection dropped before an answer."""

    retryable = True


class ResponseTooLarge(TenantplaneError):
    """The answer was larger than the client's ``max_response_bytes``: it was not read."""

    def __init__(self, method: str, path: str, limit: int) -> None:
        size = f"{limit // 1048576} MiB" if limit % 1048576 == 0 else f"{limit} bytes"
        super().__init__(f"{method} {path}: the answer is larger than {size} ({limit} bytes)")
        self.limit = limit


class WaitTimeout(TenantplaneError):
    """wait_for() gave up before the resource reached the phase."""


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
