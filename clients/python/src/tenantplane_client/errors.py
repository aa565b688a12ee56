"""The errors the SDK raises: the API's envelope, or a failure to reach the API at all."""

from __future__ import annotations

from typing import Any

import httpx

# The statuses the spec calls retryable (412 is retried by update() with a fresh read).
RETRYABLE_STATUSES = frozenset({429, 500, 503})


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
    def retryable(self) -> bool:
        return self.status in RETRYABLE_STATUSES

    def __str__(self) -> str:
        parts = [f"{self.status}"]
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
