from __future__ import annotations

from fastapi import APIRouter, Request, Response

from tenantplane.access import (
    AnyCaller,
    Public,
    TenantAdminInAnyState,
    TenantMember,
    TenantMemberReads,
)
from tenantplane.billing import service, webhooks
from tenantplane.billing.context import BillingContext
from tenantplane.billing.schemas import InvoiceRead, PlanRead, PortalSessionRead, ReceiptLink
from tenantplane.catalogue.plans import load_plans
from tenantplane.db.session import ReadsDep, SessionDep
from tenantplane.http.documents import DocumentResponse, EncodedDocuments
from tenantplane.http.errors import NotFound, error_responses
from tenantplane.http.etag import NOT_MODIFIED, set_etag
from tenantplane.http.paging import Paging, paged_in_stored_order
from tenantplane.http.routers import PrefixedRouter
from tenantplane.http.schemas import ItemList, PagedList
from tenantplane.idempotency.dependency import (
    IDEMPOTENCY_RESPONSES,
    CapturingRoute,
    IdempotentInAnyState,
)
from tenantplane.tenant.models import Plan

router = APIRouter(tags=["billing"])
tenant_router = PrefixedRouter(
    prefix="/tenants/{tenant}", tags=["billing"], route_class=CapturingRoute
)

NO_STORE = "no-store"


def billing_context(request: Request) -> BillingContext:
    """Built once per app from its settings (prices, usage source, provider)."""
    context: BillingContext | None = getattr(request.app.state, "billing", None)
    if context is None:
        context = BillingContext.from_settings(request.app.state.settings)
        request.app.state.billing = context
    return context


@tenant_router.get(
    "/invoices", response_model=ItemList[InvoiceRead], response_model_exclude_none=True
)
async def list_invoices(
    principal: TenantMemberReads, reads: ReadsDep, request: Request
) -> DocumentResponse:
    """List the tenant's invoices.

    The full history ordered by billing period, without pagination. Members.
    """
    # Each invoice's document is encoded once per version and kept (http/documents.py):
    # a long history rebuilt on every poll cost tens of ms per request.
    documents: EncodedDocuments = request.app.state.documents
    items = await service.invoice_listing(reads, documents, principal.tenant_id)
    return DocumentResponse({"items": items})


@tenant_router.get(
    "/invoices/{name}",
    response_model_exclude_none=True,
    responses={**error_responses(404), **NOT_MODIFIED},
)
async def get_invoice(
    principal: TenantMember, name: str, session: SessionDep, response: Response
) -> InvoiceRead:
    """Read one invoice.

    With its line items; take names from the list. Members.
    """
    invoice = await service.get_invoice(session, principal.tenant_id, name)
    set_etag(response, invoice.resource_version)
    return InvoiceRead.of(invoice)


@tenant_router.get("/invoices/{name}/receipt", responses=error_responses(404, 409, 502))
async def get_receipt(
    principal: TenantMember, name: str, session: SessionDep, request: Request, response: Response
) -> ReceiptLink:
    """Get a receipt link.

    A fresh, short-lived link to the provider-hosted invoice PDF; only Paid or PastDue invoices
    that carry a providerTransactionID have one. Members.
    """
    provider = billing_context(request).provider
    url = await service.receipt_url(session, provider, principal.tenant_id, name)
    response.headers["Cache-Control"] = NO_STORE
    return ReceiptLink(url=url)


@tenant_router.post(
    "/billing/portal-session",
    response_model_exclude_none=True,
    responses={**error_responses(409, 502), **IDEMPOTENCY_RESPONSES},
)
async def create_portal_session(
    principal: TenantAdminInAnyState,
    _: IdempotentInAnyState,
    session: SessionDep,
    request: Request,
    response: Response,
) -> PortalSessionRead:
    """Create a payment-portal session.

    Fresh, short-lived URLs of the provider's portal, for instance to fix the card on file. Admin.
    Open to suspended and cancelled tenants too: it changes nothing here, and it is how an
    overdue invoice gets paid.
    """
    provider = billing_context(request).provider
    portal = await service.portal_session(session, provider, principal.tenant_id)
    response.headers["Cache-Control"] = NO_STORE
    return PortalSessionRead(
        overview_url=portal.overview_url,
        update_payment_method_url=portal.update_payment_method_url,
    )


@router.get("/plans", responses=error_responses(410))
async def list_plans(identity: AnyCaller, request: Request, paging: Paging) -> PagedList[PlanRead]:
    """List the plans.

    The plan catalogue, read-only: each plan's limits and prices; pages with `limit` and
    `continue`. Any authenticated caller.
    """
    plans, last = paged_in_stored_order(
        list(Plan), lambda _at, plan: plan.value, paging.page("plans")
    )
    return PagedList[PlanRead](
        items=[_plan(request, plan) for plan in plans],
        continue_=paging.next_token("plans", "", last),
    )


@router.get("/plans/{name}", responses=error_responses(404))
async def get_plan(identity: AnyCaller, request: Request, name: str) -> PlanRead:
    """Get a plan.

    One plan of the catalogue: its limits and prices. Any authenticated caller; 404 for a
    name the catalogue does not have.
    """
    try:
        plan = Plan(name)
    except ValueError:
        raise NotFound("plan") from None
    return _plan(request, plan)


def _plan(request: Request, plan: Plan) -> PlanRead:
    catalogue = load_plans(request.app.state.settings.plans_file)
    prices = billing_context(request).prices
    return PlanRead.of(catalogue.limits(plan), prices.for_plan(plan.value))


@router.post("/webhooks/paddle")
async def paddle_webhook(_: Public, request: Request, session: SessionDep) -> dict[str, bool]:
    """Receive a Paddle notification.

    Authenticated by the Paddle-Signature header, not by a bearer token; each event is stored
    once and applied asynchronously.
    """
    body = await request.body()
    provider = billing_context(request).provider
    inserted = await webhooks.receive(session, provider, request.headers, body)
    return {"received": True, "duplicate": not inserted}
