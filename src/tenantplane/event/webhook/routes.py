"""``/tenants/{tenant}/webhooks``: subscriptions to the tenant's events, and their
deliveries. Admins only (reads included: a webhook's URL and deliveries say where the
tenant's events go). docs/webhooks.md."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Path, Request, Response, status

from tenantplane.access import TenantAdmin
from tenantplane.db.session import SessionDep
from tenantplane.event.webhook import service
from tenantplane.event.webhook.destination import firewall_from_settings
from tenantplane.event.webhook.models import WebhookDelivery
from tenantplane.event.webhook.schemas import (
    DeliveryDetail,
    DeliveryRead,
    WebhookCreate,
    WebhookRead,
    WebhookUpdate,
    WebhookWithSecret,
)
from tenantplane.http.errors import error_responses
from tenantplane.http.etag import NOT_MODIFIED, IfMatch, set_etag
from tenantplane.http.firewall import Firewall
from tenantplane.http.location import origin_of, set_location
from tenantplane.http.paging import Paging
from tenantplane.http.routers import PrefixedRouter
from tenantplane.http.schemas import PagedList
from tenantplane.idempotency.dependency import IDEMPOTENCY_RESPONSES, CapturingRoute, Idempotent

# Checked by the service (400 INVALID_ID); documented here. On the wire `id`; in code
# `webhook_id` (never the builtin).
WebhookId = Annotated[
    str,
    Path(
        alias="id",
        description="Webhook id",
        json_schema_extra={"pattern": service.WEBHOOK_ID_PATTERN},
    ),
]
DeliveryId = Annotated[
    str,
    Path(description="Delivery id", json_schema_extra={"pattern": service.DELIVERY_ID_PATTERN}),
]

router = PrefixedRouter(
    prefix="/tenants/{tenant}/webhooks", tags=["webhooks"], route_class=CapturingRoute
)

LISTING = "webhooks"
DELIVERIES = "webhook-deliveries"

# A delivery made to be sent (ping, redeliver): 202, and where to follow it (`_accepted`).
ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {
        "headers": {
            "Location": {
                "description": "The delivery's absolute URL, to follow its attempts",
                "schema": {"type": "string", "format": "uri"},
            }
        }
    }
}


def _firewall(request: Request) -> Firewall:
    return firewall_from_settings(request.app.state.settings)


def _secret_shown(response: Response, answer: service.WithSecret) -> None:
    set_etag(response, answer.webhook.resource_version)
    response.headers["Cache-Control"] = "no-store"


def _accepted(request: Request, response: Response, delivery: WebhookDelivery) -> DeliveryRead:
    """A delivery made to be sent: 202, and where it can be followed."""
    path = f"{request.url.path.split('/webhooks/', 1)[0]}/webhooks/{delivery.webhook_id}"
    location = f"{path}/deliveries/{delivery.id}"
    response.headers["Location"] = origin_of(request) + quote(location)
    return DeliveryRead.of(delivery)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model_exclude_none=True,
    responses={**IDEMPOTENCY_RESPONSES, **error_responses(409)},
)
async def create_webhook(
    principal: TenantAdmin,
    _: Idempotent,
    body: WebhookCreate,
    session: SessionDep,
    request: Request,
    response: Response,
) -> WebhookWithSecret:
    """Create a webhook.

    The tenant's events whose action matches one of `events` are sent to `url`, signed
    (Standard Webhooks). The signing secret (`whsec_…`) is in this response only. At most
    20 per tenant (409 `WEBHOOK_LIMIT_REACHED`). Admin.
    """
    created = await service.create(
        session,
        principal.tenant_id,
        body,
        keys=request.app.state.keys,
        firewall=_firewall(request),
    )
    _secret_shown(response, created)
    set_location(request, response, created.webhook.id)
    return WebhookWithSecret.with_secret(created.webhook, created.secret)


@router.get("", response_model_exclude_none=True)
async def list_webhooks(
    principal: TenantAdmin, session: SessionDep, paging: Paging
) -> PagedList[WebhookRead]:
    """List the tenant's webhooks.

    Oldest first; paged with `limit` and `continue`. Never a secret. Admin.
    """
    page = paging.page(LISTING, principal.tenant_id)
    webhooks, last = await service.list_webhooks(session, principal.tenant_id, page)
    return PagedList[WebhookRead](
        items=[WebhookRead.of(webhook) for webhook in webhooks],
        continue_=paging.next_token(LISTING, principal.tenant_id, last),
    )


@router.get(
    "/{id}", response_model_exclude_none=True, responses={**error_responses(404), **NOT_MODIFIED}
)
async def get_webhook(
    principal: TenantAdmin, webhook_id: WebhookId, session: SessionDep, response: Response
) -> WebhookRead:
    """Read one webhook.

    Never its secret. Admin.
    """
    webhook = await service.get(session, principal.tenant_id, webhook_id)
    set_etag(response, webhook.resource_version)
    return WebhookRead.of(webhook)


@router.patch("/{id}", response_model_exclude_none=True, responses=error_responses(404, 412))
async def update_webhook(
    principal: TenantAdmin,
    webhook_id: WebhookId,
    body: WebhookUpdate,
    session: SessionDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> WebhookRead:
    """Change a webhook.

    Its `url`, `events`, `description` or `enabled`. Enabled again, it is sent the events
    that follow (not those missed). Admin.
    """
    webhook = await service.update(
        session, principal.tenant_id, webhook_id, body, if_match, firewall=_firewall(request)
    )
    set_etag(response, webhook.resource_version)
    return WebhookRead.of(webhook)


@router.delete("/{id}", status_code=status.HTTP_204_NO_CONTENT, responses=error_responses(404, 412))
async def delete_webhook(
    principal: TenantAdmin, webhook_id: WebhookId, session: SessionDep, if_match: IfMatch = None
) -> None:
    """Delete a webhook.

    Its deliveries too: nothing more is sent to it. Admin.
    """
    await service.delete(session, principal.tenant_id, webhook_id, if_match)


@router.post(
    "/{id}/rotate-secret",
    response_model_exclude_none=True,
    responses={**IDEMPOTENCY_RESPONSES, **error_responses(404, 412)},
)
async def rotate_webhook_secret(
    principal: TenantAdmin,
    _: Idempotent,
    webhook_id: WebhookId,
    session: SessionDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> WebhookWithSecret:
    """Rotate a webhook's signing secret.

    The new secret is in this response only (and in its replay to a repeat under the same
    `Idempotency-Key`, which rotates nothing). For 24 hours the old one signs too (two
    signatures in `webhook-signature`). Admin.
    """
    rotated = await service.rotate_secret(
        session, principal.tenant_id, webhook_id, if_match, keys=request.app.state.keys
    )
    _secret_shown(response, rotated)
    return WebhookWithSecret.with_secret(rotated.webhook, rotated.secret)


@router.post(
    "/{id}/ping",
    status_code=status.HTTP_202_ACCEPTED,
    response_model_exclude_none=True,
    responses={**ACCEPTED, **IDEMPOTENCY_RESPONSES, **error_responses(404, 409)},
)
async def ping_webhook(
    principal: TenantAdmin,
    _: Idempotent,
    webhook_id: WebhookId,
    session: SessionDep,
    request: Request,
    response: Response,
) -> DeliveryRead:
    """Ping a webhook.

    Sends a signed `webhook.ping` message, as every delivery is sent; the answer is the
    delivery (`Location`), to follow its attempts. Admin.
    """
    delivery = await service.ping(session, principal.tenant_id, webhook_id)
    return _accepted(request, response, delivery)


@router.get("/{id}/deliveries", response_model_exclude_none=True, responses=error_responses(404))
async def list_webhook_deliveries(
    principal: TenantAdmin, webhook_id: WebhookId, session: SessionDep, paging: Paging
) -> PagedList[DeliveryRead]:
    """List a webhook's deliveries.

    Newest first: each message, its attempts, the last answer and the next attempt; paged
    with `limit` and `continue`. Admin.
    """
    scope = f"{principal.tenant_id}/{webhook_id}"
    page = paging.page(DELIVERIES, scope)
    deliveries, last = await service.list_deliveries(session, principal.tenant_id, webhook_id, page)
    return PagedList[DeliveryRead](
        items=[DeliveryRead.of(delivery) for delivery in deliveries],
        continue_=paging.next_token(DELIVERIES, scope, last),
    )


@router.get(
    "/{id}/deliveries/{delivery}",
    response_model_exclude_none=True,
    responses=error_responses(404),
)
async def get_webhook_delivery(
    principal: TenantAdmin, webhook_id: WebhookId, delivery: DeliveryId, session: SessionDep
) -> DeliveryDetail:
    """Read one delivery of a webhook.

    With every attempt. Admin.
    """
    found = await service.get_delivery(session, principal.tenant_id, webhook_id, delivery)
    return DeliveryDetail.detail_of(found)


@router.post(
    "/{id}/deliveries/{delivery}/redeliver",
    status_code=status.HTTP_202_ACCEPTED,
    response_model_exclude_none=True,
    responses={**ACCEPTED, **IDEMPOTENCY_RESPONSES, **error_responses(404, 409)},
)
async def redeliver_webhook_delivery(
    principal: TenantAdmin,
    _: Idempotent,
    webhook_id: WebhookId,
    delivery: DeliveryId,
    session: SessionDep,
    request: Request,
    response: Response,
) -> DeliveryRead:
    """Redeliver a delivery's message.

    The same `webhook-id` and body, sent again as a new delivery, answered with its id
    (`Location`). Admin.
    """
    made = await service.redeliver(session, principal.tenant_id, webhook_id, delivery)
    return _accepted(request, response, made)
