"""Python SDK of the tenantplane API: ``Tenantplane`` (sync) and ``AsyncTenantplane``."""

from tenantplane_client import models
from tenantplane_client._async import OPERATIONS, AsyncTenantplane
from tenantplane_client._sync import Tenantplane
from tenantplane_client.errors import (
    ApiError,
    ConnectionFailed,
    ErrorKind,
    ResponseTooLarge,
    TenantplaneError,
    WaitTimeout,
)
from tenantplane_client.limits import DEFAULT_MAX_RESPONSE_BYTES
from tenantplane_client.ratelimit import RateLimit
from tenantplane_client.retry import NO_RETRIES, RetryPolicy

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "NO_RETRIES",
    "OPERATIONS",
    "ApiError",
    "AsyncTenantplane",
    "ConnectionFailed",
    "ErrorKind",
    "RateLimit",
    "ResponseTooLarge",
    "RetryPolicy",
    "Tenantplane",
    "TenantplaneError",
    "WaitTimeout",
    "__version__",
    "models",
]
