from __future__ import annotations

import functools
import math
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response, status
from sqlalchemy.ext.asyncio import AsyncSession

from tenantplane.access import (
    AnyCaller,
    TenantAdmin,
    TenantMemberReads,
    TenantMemberUnlessCancelled,
)
from tenantplane.catalogue.plans import load_plans
from tenantplane.catalogue.versions import load_versions
from tenantplane.cluster import credentials, service
from tenantplane.cluster.access_schemas import ClusterCredentials
from tenantplane.cluster.schemas import (
    ClusterCreate,
    ClusterRead,
    ClusterUpdate,
    ConnectionDetails,
    VersionList,
    VersionRead,
)
from tenantplane.config import Settings
from tenantplane.db.session import ReadsDep, SessionDep, before_commit, get_database
from tenantplane.event.log import Draft, append
from tenantplane.http.documents import DocumentResponse, EncodedDocuments
from tenantplane.http.errors import error_responses
from tenantplane.http.etag import NOT_MODIFIED, IfMatch, set_etag
from tenantplane.http.location import set_location
from tenantplane.http.names import path_name, resource_name_path
from tenantplane.http.paging import Paging, paged_in_stored_order, with_continue
from tenantplane.http.routers import PrefixedRouter
from tenantplane.http.schemas import PagedList
from tenantplane.idempotency.dependency import IDEMPOTENCY_RESPONSES, CapturingRoute, Idempotent

router = PrefixedRouter(
    prefix="/tenants/{tenant}/clusters", tags=["clusters"], route_class=CapturingRoute
)
versions_router = APIRouter(tags=["clusters"])


async def catalogues(request: Request) -> service.Catalogues:
    settings: Settings = request.app.state.settings
    return service.Catalogues(
        load_plans(settings.plans_file), load_versions(settings.versions_file)
    )


CataloguesDep = Annotated[service.Catalogues, Depends(catalogues)]
ClusterName = Annotated[str, resource_name_path("Cluster name")]


def _cluster_name(name: ClusterName) -> str:
    return path_name(name, what="cluster")


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model_exclude_none=True,
    responses={**error_responses(409), **IDEMPOTENCY_RESPONSES},
)
async def create_cluster(
    principal: TenantAdmin,
    _: Idempotent,
    body: ClusterCreate,
    session: SessionDep,
    catalogues: CataloguesDep,
    request: Request,
    response: Response,
) -> ClusterRead:
    """Create a cluster.

    Provisioning continues asynchronously: poll the cluster until `status.phase` is Running. Admin.
    """
    cluster, warnings = await service.create(session, principal.tenant_id, body, catalogues)
    set_etag(response, cluster.resource_version)
    set_location(request, response, cluster.name)
    return ClusterRead.of(cluster, warnings)


# Reads are built as JSON from plain rows and sent as is: a session, ORM objects and
# response models validated again by the framework were most of a poll's cost.
@router.get("", response_model=PagedList[ClusterRead], response_model_exclude_none=True)
async def list_clusters(
    principal: TenantMemberReads, reads: ReadsDep, request: Request, paging: Paging
) -> DocumentResponse:
    """List the tenant's clusters.

    Oldest first; pages with `limit` and `continue`. Members.
    """
    documents: EncodedDocuments = request.app.state.documents
    page = paging.page("clusters", principal.tenant_id)
    items, last = await service.cluster_listing(reads, documents, principal.tenant_id, page)
    token = paging.next_token("clusters", principal.tenant_id, last)
    return DocumentResponse(with_continue({"items": items}, token))


@router.get(
    "/{name}",
    response_model=ClusterRead,
    response_model_exclude_none=True,
    responses={**error_responses(404), **NOT_MODIFIED},
)
async def get_cluster(
    principal: TenantMemberReads, name: ClusterName, reads: ReadsDep
) -> DocumentResponse:
    """Read one cluster.

    The ETag answered is its resource version. Members.
    """
    document = await service.shown(reads, principal.tenant_id, _cluster_name(name))
    response = DocumentResponse(document)
    set_etag(response, document["resourceVersion"])
    return response


@router.patch("/{name}", response_model_exclude_none=True, responses=error_responses(404, 409, 412))
async def update_cluster(
    principal: TenantAdmin,
    name: ClusterName,
    body: ClusterUpdate,
    session: SessionDep,
    catalogues: CataloguesDep,
    response: Response,
    if_match: IfMatch = None,
) -> ClusterRead:
    """Update a cluster.

    Changes the version (an upgrade, done asynchronously); toggling highAvailability is refused.
    Admin.
    """
    cluster = await service.update(
        session, principal.tenant_id, _cluster_name(name), body, if_match, catalogues
    )
    set_etag(response, cluster.resource_version)
    return ClusterRead.of(cluster)


@router.delete(
    "/{name}",
    status_code=status.HTTP_202_ACCEPTED,
    response_model_exclude_none=True,
    responses=error_responses(404, 412),
)
async def delete_cluster(
    principal: TenantAdmin,
    name: ClusterName,
    session: SessionDep,
    request: Request,
    response: Response,
    if_match: IfMatch = None,
) -> ClusterRead:
    """Delete a cluster.

    Accepted (202): the cluster is torn down asynchronously and then disappears. Admin.
    """
    cluster, change = await service.delete(
        session, principal.tenant_id, _cluster_name(name), if_match
    )
    if change is not None:
        # Its phase change (to Terminating) follows the request's audit event in the stream.
        before_commit(request, functools.partial(_append, principal.tenant_id, change))
    set_etag(response, cluster.resource_version)
    return ClusterRead.of(cluster)


async def _append(tenant_id: int, draft: Draft, session: AsyncSession, _: Response) -> None:
    await append(session, tenant_id, draft)


@router.get("/{name}/connection-details", responses=error_responses(404))
async def get_connection_details(
    principal: TenantMemberReads, name: ClusterName, reads: ReadsDep, request: Request
) -> ConnectionDetails:
    """Read a cluster's connection details.

    Endpoint and CA certificate for a kubeconfig; 503 with Retry-After until the cluster is
    ready. Members.
    """
    settings: Settings = request.app.state.settings
    retry_after = max(1, math.ceil(settings.simulator_step_seconds))
    return await service.connection_details(
        reads, principal.tenant_id, _cluster_name(name), retry_after
    )


@router.post("/{name}/credentials", responses=error_responses(404))
async def create_cluster_credentials(
    principal: TenantMemberUnlessCancelled,
    name: ClusterName,
    reads: ReadsDep,
    request: Request,
    response: Response,
) -> ClusterCredentials:
    """Issue cluster credentials.

    A short-lived token for the cluster's API server (kubectl's bearer token), bound to the
    cluster and the caller: the cluster accepts it until `expiresAt` while the caller is still a
    member (or the key still exists); admins get cluster-admin, readonly callers (and every
    caller while the tenant is suspended) the `view` role. Members, readonly included.
    """
    settings: Settings = request.app.state.settings
    # A credential: no cache, no proxy keeps a copy.
    response.headers["Cache-Control"] = "no-store"
    return await credentials.issue(
        reads,
        request.app.state.keys,
        principal,
        _cluster_name(name),
        await get_database(request).clock.now(),
        timedelta(seconds=settings.cluster_credentials_seconds),
    )


@versions_router.get("/versions", responses=error_responses(410))
async def list_versions(_: AnyCaller, catalogues: CataloguesDep, paging: Paging) -> VersionList:
    """List supported Kubernetes versions.

    The versions clusters may be created with or upgraded to, and the default; pages with
    `limit` and `continue`. Any authenticated caller.
    """
    versions = catalogues.versions
    listed, last = paged_in_stored_order(
        versions.versions, lambda _at, entry: entry.version, paging.page("versions")
    )
    return VersionList(
        default=versions.default,
        items=[
            VersionRead(
                version=entry.version,
                kubernetes_version=entry.kubernetes_version,
                default=entry.version == versions.default,
                retiring=entry.version == versions.oldest.version,
            )
            for entry in listed
        ],
        continue_=paging.next_token("versions", "", last),
    )
