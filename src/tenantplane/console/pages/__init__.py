"""The console's pages, one module per section of the API."""

from fastapi import APIRouter

from tenantplane.console.pages.alerting import router as alerting
from tenantplane.console.pages.alerting_collections import router as alerting_collections
from tenantplane.console.pages.alerting_routes import router as alerting_routes
from tenantplane.console.pages.apikeys import router as apikeys
from tenantplane.console.pages.clusters import router as clusters
from tenantplane.console.pages.events import router as events
from tenantplane.console.pages.invoices import router as invoices
from tenantplane.console.pages.members import router as members
from tenantplane.console.pages.secrets import router as secrets

PAGE_ROUTERS: tuple[APIRouter, ...] = (
    clusters,
    invoices,
    events,
    secrets,
    members,
    apikeys,
    # In this order: the overview's and sections' paths before the collections' and routes'.
    alerting,
    alerting_routes,
    alerting_collections,
)
