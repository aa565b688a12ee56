"""Audit events: every write the API answered, and every write it refused for access.

The access check of a write registers ``record_write`` to run in the request's transaction
once the route has answered (db/session.py ``before_commit``): the event and the change
commit together, or neither does. A write refused with 403 is recorded by ``record_refusal``
in the request's session once its transaction is rolled back.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from urllib.parse import unquote

from fastapi import Request, Response
from fastapi.routing import APIRoute
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.db.session import before_commit, on_failure
from tenantplane.event.actions import AuditAction, audit_action
from tenantplane.event.log import Actor, ActorKind, Draft, EventType, append
from tenantplane.http.errors import ApiError
from tenantplane.http.etag import entity_tags
from tenantplane.http.request_id import request_id_of


def actor_of(email: str, api_key_id: str | None) -> Actor:
    if api_key_id is not None:
        return Actor(ActorKind.apikey, api_key_id)
    return Actor(ActorKind.member, email)


def _action(request: Request) -> AuditAction:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        raise RuntimeError("an audited write outside an API route")
    found = audit_action(request.method, route.path)
    if found is None:
        raise RuntimeError(f"no audit action for {request.method} {route.path}")
    return found


def _resource_name(request: Request, action: AuditAction, response: Response | None) -> str:
    if action.fixed_name:
        return action.fixed_name
    if action.name_from is None:
        return str(request.path_params.get("tenant", ""))
    if action.name_from:
        return str(request.path_params.get(action.name_from, ""))
    if response is None:
        return _name_in_body(request)
    location = response.headers.get("location", "")
    return unquote(location.rstrip("/").rsplit("/", 1)[-1]) if location else ""


def _name_in_body(request: Request) -> str:
    """A refused create's resource: the name (or email) its body asked for, if any. FastAPI
    has read the body before the access check ran; it is not validated yet."""
    body: bytes = getattr(request, "_body", b"")
    try:
        document = json.loads(body) if body else None
    except ValueError:
        return ""
    if not isinstance(document, dict):
        return ""
    named = document.get("name", document.get("email"))
    return named[:320] if isinstance(named, str) else ""


def _version(header: str | None) -> str | None:
    tags = entity_tags(header) if header else None
    return tags[0] if tags else None


def _draft(request: Request, actor: Actor, status: int, response: Response | None) -> Draft:
    action = _action(request)
    fields: dict[str, Any] = {
        "sourceIp": request.client.host if request.client else None,
        "requestId": request_id_of(request.scope),
        "status": status,
    }
    versions = {
        "before": _version(request.headers.get("if-match")),
        "after": _version(response.headers.get("etag")) if response is not None else None,
    }
    if versions := {key: value for key, value in versions.items() if value is not None}:
        fields["resourceVersion"] = versions
    name = _resource_name(request, action, response)
    return Draft(EventType.audit, action.action, action.kind, name, actor, {}, fields)


def audit_write(request: Request, tenant_id: int, actor: Actor) -> None:
    """Record the write this request makes, in its transaction, once the route answers; or
    its refusal, when the route refuses it with 403 after the access check (a field only the
    platform may set, a role change the caller may not make)."""
    before_commit(request, functools.partial(_record_write, request, tenant_id, actor))
    on_failure(request, functools.partial(_record_late_refusal, request, tenant_id, actor))


async def _record_late_refusal(
    request: Request, tenant_id: int, actor: Actor, session: AsyncSession, exc: Exception
) -> None:
    if isinstance(exc, ApiError) and exc.status == 403:
        await session.rollback()
        await record_refusal(session, request, tenant_id, actor)


async def _record_write(
    request: Request, tenant_id: int, actor: Actor, session: AsyncSession, response: Response
) -> None:
    route = request.scope.get("route")
    default = route.status_code if isinstance(route, APIRoute) else None
    status = response.status_code or default or 200
    await append(session, tenant_id, _draft(request, actor, status, response))


async def record_refusal(
    session: AsyncSession, request: Request, tenant_id: int, actor: Actor
) -> None:
    """Record a write refused with 403, in a transaction of its own in ``session`` (the
    request's, rolled back by the caller)."""
    await append(session, tenant_id, _draft(request, actor, 403, None))
    await session.commit()
