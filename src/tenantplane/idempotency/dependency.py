"""The Idempotency-Key dependency of the creating POST routes, and the route class that hands
it the response.

The request's own transaction carries everything: the key is held for the transaction
(PostgreSQL advisory lock; SQLite has one writer at a time), and the response is stored in
it, so it commits together with the resource it describes or not at all. A process that dies
mid-request leaves neither a resource nor a stuck key behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Annotated, Any

import structlog
from fastapi import Depends, Header, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.access import Principal, TenantAdmin, TenantAdminInAnyState
from tenantplane.db.clock import database_now
from tenantplane.db.session import SessionDep
from tenantplane.http.errors import ApiError, error_responses, validation_error
from tenantplane.http.location import origin_of
from tenantplane.idempotency import service
from tenantplane.idempotency.repository import IdempotencyRepository
from tenantplane.keys import KeyRing

log = structlog.get_logger(__name__)

_RESPONSE_STATE = "idempotent_response"

IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias=service.HEADER,
        description=(
            'Makes the request safe to retry: an sf-string (`"…"`, a bare value is accepted '
            "too) of 1-255 printable ASCII characters, unique per request (a UUID). The "
            "first response is kept for 24 hours and answered again, with "
            "`Idempotent-Replayed: true`, to a repeat with the same body."
        ),
    ),
]

# The statuses a route under the key can add to its own: the key in flight, reused.
IDEMPOTENCY_RESPONSES = error_responses(409, 422)


class CapturingRoute(APIRoute):
    """Keeps the response a route made in the request's state, where the idempotency
    dependency, which closes after it and before the session commits, stores it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def capture(request: Request) -> Response:
            response = await handler(request)
            setattr(request.state, _RESPONSE_STATE, response)
            return response

        return capture


def _failure_response(exc: BaseException) -> Response | None:
    """The error answer of a completed request, which a repeat gets too; None for failures
    a retry may cure (5xx, anything unexpected), which are not kept."""
    if isinstance(exc, RequestValidationError):
        return validation_error(exc).response()
    if isinstance(exc, ApiError) and exc.status < 500:
        return exc.response()
    return None


async def _store_failure(
    session: AsyncSession,
    keys: KeyRing,
    tenant_id: int,
    key: str,
    fingerprint: str,
    answer: Response,
) -> None:
    # The request's transaction failed and is rolled back (its locks released); the failure
    # is recorded in a transaction of its own, after any success recorded meanwhile.
    await session.rollback()
    repository = IdempotencyRepository.from_session(session)
    try:
        await repository.lock(tenant_id, key)
        now = await database_now(session)
        await repository.purge_expired(tenant_id, now)
        record = service.make_record(
            keys,
            tenant_id=tenant_id,
            key=key,
            request_fingerprint=fingerprint,
            response=answer,
            now=now,
        )
        await repository.add_unless_present(record)
        await session.commit()
    except SQLAlchemyError as exc:
        # The client gets its error all the same; a repeat then runs the request again.
        await session.rollback()
        log.warning("idempotency record not stored", error=str(exc).splitlines()[0])


def _identity(principal: Principal) -> str:
    """Who sent the request: its API key, or the member a bearer token named."""
    if principal.api_key_id is not None:
        return f"api-key:{principal.api_key_id}"
    return f"member:{principal.email}"


@asynccontextmanager
async def _idempotent(
    request: Request,
    principal: Principal,
    session: AsyncSession,
    header: str | None,
) -> AsyncIterator[None]:
    if header is None:
        yield
        return
    key = service.parse_key(header)
    keys: KeyRing = request.app.state.keys
    fingerprint = service.fingerprint(
        _identity(principal), request.method, request.url.path, await request.body()
    )
    repository = IdempotencyRepository.from_session(session)
    await service.claim(
        repository,
        keys,
        tenant_id=principal.tenant_id,
        key=key,
        request_fingerprint=fingerprint,
        now=await database_now(session),
        origin=origin_of(request),
    )
    try:
        yield
    except BaseException as exc:
        answer = _failure_response(exc)
        if answer is not None:
            await _store_failure(session, keys, principal.tenant_id, key, fingerprint, answer)
        raise
    response: Response | None = getattr(request.state, _RESPONSE_STATE, None)
    if response is None or response.status_code >= 500:
        return
    record = service.make_record(
        keys,
        tenant_id=principal.tenant_id,
        key=key,
        request_fingerprint=fingerprint,
        response=response,
        now=await database_now(session),
    )
    await repository.add(record)


async def idempotent_admin_write(
    request: Request,
    principal: TenantAdmin,
    session: SessionDep,
    idempotency_key: IdempotencyKeyHeader = None,
) -> AsyncIterator[None]:
    async with _idempotent(request, principal, session, idempotency_key):
        yield


async def idempotent_admin_write_in_any_state(
    request: Request,
    principal: TenantAdminInAnyState,
    session: SessionDep,
    idempotency_key: IdempotencyKeyHeader = None,
) -> AsyncIterator[None]:
    async with _idempotent(request, principal, session, idempotency_key):
        yield


# scope="function": it must close before the session it writes to commits.
Idempotent = Annotated[None, Depends(idempotent_admin_write, scope="function")]
IdempotentInAnyState = Annotated[
    None, Depends(idempotent_admin_write_in_any_state, scope="function")
]
