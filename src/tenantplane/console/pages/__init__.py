"""The console's pages, one module per section of the API."""

from fastapi import APIRouter

from tenantplane.console.pages.clusters import router as clusters

PAGE_ROUTERS: tuple[APIRouter, ...] = (clusters,)
