"""The one error type and the handlers that render the spec's envelope for every failure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path

from tenantplane.db.engine import Database
from tenantplane.db.errors import DatabaseTrouble, classify
from tenantplane.http.asgi import RATE_LIMIT_HEADERS
from tenantplane.http.request_id import REQUEST_ID_HEADER, request_id_of
from tenantplane.http.route_index import api_routes

log = structlog.get_logger(__name__)


class ErrorEnvelope(BaseModel):
    """The spec's error envelope (OpenAPI description of every error response)."""

    error: str
    code: str | None = None
    message: str | None = None
    field: str | None = None
    severity: str | None = None


STATUS_DESCRIPTIONS = {
    400: "Invalid request (validation failure, unknown field, invalid name or id)",
    401: "Missing or invalid authentication",
    403: "Insufficient permission for the tenant or role",
    404: "Resource not found",
    409: "Conflict with the current state",
    410: "The continue token's place in the list is gone (CONTINUE_EXPIRED): list again",
    412: "If-Match does not match the current ETag",
    413: "Request body too large",
    415: "Request body is not JSON (Content-Type)",
    422: "Idempotency-Key already used for a different request (IDEMPOTENCY_KEY_REUSED)",
    429: "Rate limited; Retry-After carries seconds",
    500: "Internal server error",
    502: "Upstream provider unavailable",
    503: "Service unavailable; retry with backoff",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for the given error statuses, all in the envelope."""
    return {
        status: {"model": ErrorEnvelope, "description": STATUS_DESCRIPTIONS[status]}
        for status in statuses
    }


class ApiError(Exception):
    """An error answered to the client in the spec's envelope.

    Structured errors (validation and business rules) carry ``code``; the envelope then
    also carries ``message``, ``field`` and ``severity``.
    """

    def __init__(
        self,
        status: int,
        error: str,
        *,
        code: str | None = None,
        field: str | None = None,
        severity: str = "error",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.error = error
        self.code = code
        self.field = field
        self.severity = severity
        self.headers = dict(headers or {})

    def envelope(self) -> dict[str, str]:
        body = {"error": self.error}
        if self.code is not None:
            body["code"] = self.code
            body["message"] = self.error
            body["severity"] = self.severity
            if self.field is not None:
                body["field"] = self.field
        return body

    def response(self) -> JSONResponse:
        return JSONResponse(self.envelope(), status_code=self.status, headers=self.headers)


class ValidationFailed(ApiError):
    def __init__(self, error: str, *, field: str | None, code: str = "VALIDATION_FAILED") -> None:
        super().__init__(400, error, code=code, field=field)


class NotFound(ApiError):
    def __init__(self, what: str) -> None:
        super().__init__(404, f"{what} not found", code="NOT_FOUND")


class Conflict(ApiError):
    def __init__(self, error: str, *, code: str = "ALREADY_EXISTS", field: str | None = None):
        super().__init__(409, error, code=code, field=field)


class PreconditionFailed(ApiError):
    def __init__(self) -> None:
        super().__init__(
            412,
            "If-Match does not match the current resource version; re-fetch and retry",
            code="PRECONDITION_FAILED",
        )


class Unauthenticated(ApiError):
    def __init__(self, error: str = "missing or invalid authentication") -> None:
        super().__init__(401, error, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(ApiError):
    def __init__(
        self,
        error: str = "insufficient permission",
        *,
        code: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(403, error, code=code, field=field)


class ServiceUnavailable(ApiError):
    retry_after_seconds: ClassVar[int] = 5

    def __init__(self, error: str, *, code: str, retry_after: int | None = None) -> None:
        seconds = retry_after if retry_after is not None else self.retry_after_seconds
        super().__init__(503, error, code=code, headers={"Retry-After": str(seconds)})


# Seconds a client waits before retrying: a lock is usually released within one; a lost
# database or an exhausted pool needs longer.
DATABASE_BUSY_RETRY_SECONDS = 1
DATABASE_UNAVAILABLE_RETRY_SECONDS = 5


def database_error(trouble: DatabaseTrouble) -> ServiceUnavailable:
    if trouble is DatabaseTrouble.busy:
        return ServiceUnavailable(
            "the database is busy with a conflicting change; nothing was changed, retry",
            code="DATABASE_BUSY",
            retry_after=DATABASE_BUSY_RETRY_SECONDS,
        )
    return ServiceUnavailable(
        "the database is not available right now; nothing was changed, retry later",
        code="DATABASE_UNAVAILABLE",
        retry_after=DATABASE_UNAVAILABLE_RETRY_SECONDS,
    )


def field_path(loc: Sequence[int | str]) -> str:
    """Render a pydantic error location as ``sync[0].cluster``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path


def validation_error(exc: RequestValidationError) -> ApiError:
    errors: Sequence[Any] = exc.errors()
    first = errors[0] if errors else {"type": "value_error", "loc": (), "msg": "invalid request"}
    kind = str(first.get("type", ""))
    loc = tuple(first.get("loc", ()))
    where, rest = (loc[0], loc[1:]) if loc else ("body", ())
    name = field_path(rest) or None
    if kind == "json_invalid":
        return ValidationFailed("request body is not valid JSON", field=None, code="MALFORMED_JSON")
    if kind == "extra_forbidden":
        return ValidationFailed(f"unknown field: {name}", field=name, code="UNKNOWN_FIELD")
    if kind == "missing" and where == "body" and not rest:
        return ValidationFailed("request body is required", field=None)
    message = str(first.get("msg", "invalid value"))
    # pydantic prefixes custom errors with "Value error, "; the client needs only the reason.
    message = message.removeprefix("Value error, ")
    # Custom errors whose type is an upper-case code carry that code to the envelope.
    code = kind if kind.isupper() else "VALIDATION_FAILED"
    if name and kind in {"missing"}:
        message = f"{name} is required"
    elif name:
        message = f"{name}: {message}"
    if where in {"path", "query", "header"}:
        message = f"invalid {where} parameter {message}"
    return ValidationFailed(message, field=name, code=code)


_STATUS_CODES = {
    404: ("not found", "NOT_FOUND"),
    405: ("method not allowed", "METHOD_NOT_ALLOWED"),
    413: ("request body too large", "PAYLOAD_TOO_LARGE"),
    400: ("bad request", "BAD_REQUEST"),
}


def allowed_methods(request: Request) -> str:
    """Every method some route serves on this path. Starlette's own 405 names only the
    methods of the first route matching the path, while each method here is its own route."""
    path = request.scope["path"]
    methods: set[str] = set()
    for item in api_routes(request.app):
        if compile_path(item.path)[0].match(path):
            methods.add(item.method)
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def install_error_handlers(app: FastAPI) -> None:
    async def on_api_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return exc.response()

    async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return validation_error(exc).response()

    async def on_http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        error, code = _STATUS_CODES.get(exc.status_code, (str(exc.detail), None))
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request)
        return ApiError(exc.status_code, error, code=code, headers=headers).response()

    async def on_database_error(request: Request, exc: Exception) -> JSONResponse:
        trouble = classify(exc)
        if trouble is None:
            raise exc  # a real failure: the 500 handler below answers and logs it
        # Transient: the request's transaction was rolled back; a retry may well succeed.
        log.warning(f"database {trouble.value}", error=str(exc).splitlines()[0])
        database: Database | None = getattr(request.app.state, "database", None)
        if isinstance(exc, DBAPIError) and exc.connection_invalidated and database is not None:
            await database.connections_lost()
        return database_error(trouble).response()

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Runs in Starlette's outermost middleware: the request-id and security-header
        # middlewares never see this response, so their headers are set here.
        log.error("unhandled error", exc_info=exc)
        response = ApiError(500, "internal server error", code="INTERNAL").response()
        response.headers[REQUEST_ID_HEADER] = request_id_of(request.scope)
        response.headers["Cache-Control"] = "no-store"
        for name, value in getattr(request.app.state, "security_headers", {}).items():
            response.headers[name] = value
        for raw_name, raw_value in request.scope.get(RATE_LIMIT_HEADERS, ()):
            response.headers[raw_name.decode()] = raw_value.decode()
        return response

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(DBAPIError, on_database_error)
    app.add_exception_handler(PoolTimeout, on_database_error)
    app.add_exception_handler(Exception, on_unexpected)
