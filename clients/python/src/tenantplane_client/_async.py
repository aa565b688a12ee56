"""The asynchronous client (``AsyncTenantplane``); ``_sync.py`` is generated from this file
(and the groups' ``_sync_clusters.py``, ``_sync_groups.py`` from theirs)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx
from pydantic import TypeAdapter

from tenantplane_client import models as m
from tenantplane_client._async_clusters import AsyncClusters, AsyncSecrets
from tenantplane_client._async_events import AsyncEvents, AsyncWebhooks
from tenantplane_client._async_groups import (
    AsyncAlerting,
    AsyncApiKeys,
    AsyncBilling,
    AsyncInvoices,
    AsyncMembers,
)
from tenantplane_client._common import (
    API_PREFIX,
    DEFAULT_PAGE_SIZE,
    DEFAULT_TIMEOUT,
    UPDATE_RETRIES,
    Body,
    _body,
    _segment,
    authorization,
)
from tenantplane_client.errors import ApiError, ConnectionFailed
from tenantplane_client.limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    buffered,
    check_declared,
    check_received,
)
from tenantplane_client.ratelimit import RateLimit
from tenantplane_client.retry import RetryPolicy, retry_safe

T = TypeVar("T")


class AsyncTenantplane:
    """A tenant's view of the API.

    ``url`` is the server's origin (``http://127.0.0.1:8080``); ``token`` an API key
    (``svc_…``) or an OIDC token. Requests are retried by ``retry`` (the spec's rules);
    POSTs carry a fresh Idempotency-Key unless ``idempotency_keys`` is False.
    """

    def __init__(
        self,
        url: str,
        tenant: str,
        token: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        idempotency_keys: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
        user_agent: str = "tenantplane-client",
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> None:
        self.tenant = tenant
        # Items asked per page when a list is walked (``iter``, ``list``), 1 to 1000.
        self.page_size = page_size
        self.max_response_bytes = max_response_bytes
        self.retry = retry or RetryPolicy()
        self.idempotency_keys = idempotency_keys
        # The budget the last answer reported (RateLimit-*), None before the first or when
        # it reported none.
        self.rate_limit: RateLimit | None = None
        self.http = httpx.AsyncClient(
            base_url=url.rstrip("/") + API_PREFIX,
            headers={"Authorization": authorization(token), "User-Agent": user_agent},
            timeout=timeout,
            transport=transport,
        )
        self.clusters = AsyncClusters(self)
        self.secrets = AsyncSecrets(self)
        self.members = AsyncMembers(self)
        self.apikeys = AsyncApiKeys(self)
        self.invoices = AsyncInvoices(self)
        self.billing = AsyncBilling(self)
        self.alerting = AsyncAlerting(self)
        self.events = AsyncEvents(self)
        self.webhooks = AsyncWebhooks(self)

    async def __aenter__(self) -> AsyncTenantplane:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    @property
    def tenant_path(self) -> str:
        return f"/tenants/{_segment(self.tenant)}"

    async def send(
        self, method: str, path: str, body: Body, headers: Mapping[str, str]
    ) -> httpx.Response:
        """One exchange, the answer read up to ``max_response_bytes`` (ResponseTooLarge)."""
        request = self.http.build_request(method, path, json=_body(body), headers=headers)
        response = await self.http.send(request, stream=True)
        try:
            check_declared(response, self.max_response_bytes)
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                check_received(response, len(content), self.max_response_bytes)
        finally:
            await response.aclose()
        self.rate_limit = RateLimit.of(response)
        return buffered(response, bytes(content))

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: Body = None,
        headers: Mapping[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> httpx.Response:
        """One API call with the retry rules applied; raises ApiError for an error answer."""
        sent = dict(headers or {})
        if method == "POST" and self.idempotency_keys:
            sent["Idempotency-Key"] = f'"{idempotency_key or uuid.uuid4()}"'
        may_retry = retry_safe(method, sent)
        attempt = 0
        while True:
            attempt += 1
            last = attempt >= self.retry.max_attempts or not may_retry
            try:
                response = await self.send(method, path, body, sent)
            except httpx.TransportError as exc:
                if last:
                    raise ConnectionFailed(f"{method} {path}: {exc!r}") from exc
                await asyncio.sleep(self.retry.delay(attempt, None, None))
                continue
            # 304 answers the caller's own If-None-Match: its copy is current, no error.
            if response.is_success or response.status_code == 304:
                return response
            error = ApiError.from_response(response)
            if last or not error.retryable:
                raise error
            await asyncio.sleep(self.retry.delay(attempt, error.status, error.retry_after))

    async def call(
        self,
        model: type[T] | Any,
        method: str,
        path: str,
        *,
        body: Body = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        response = await self.request(method, path, body=body, headers=headers)
        if model is None or not response.content:
            return None
        return TypeAdapter(model).validate_python(response.json())

    async def items(
        self,
        model: type[Any],
        path: str,
        query: Mapping[str, str] | None = None,
        *,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        """Every item of a list (``query``: its filters), a page of ``page_size`` at a time,
        following ``continue`` until the last page (docs/api.md, "Paging"); at most
        ``limit`` items when given."""
        if limit is not None and limit < 1:
            raise ValueError("limit must be at least 1 (None: every item)")
        params = {**(query or {}), "limit": str(self.page_size)}
        remaining = limit
        while True:
            if remaining is not None:
                params["limit"] = str(min(self.page_size, remaining))
            page = await self.call(model, "GET", f"{path}?{urlencode(params)}")
            for item in page.items:
                yield item
            if remaining is not None:
                remaining -= len(page.items)
            if page.continue_ is None or remaining == 0:
                return
            params["continue"] = page.continue_

    async def get_tenant(self) -> m.TenantRead:
        result: m.TenantRead = await self.call(m.TenantRead, "GET", self.tenant_path)
        return result

    async def update_tenant(self, body: m.TenantUpdate | Mapping[str, Any]) -> m.TenantRead:
        result: m.TenantRead = await self.call(m.TenantRead, "PATCH", self.tenant_path, body=body)
        return result

    async def versions(self) -> list[m.VersionRead]:
        """The supported versions, oldest first; the default is the one marked ``default``
        (a list, as every collection the client reads)."""
        return [version async for version in self.items(m.VersionList, "/versions")]

    async def plans(self) -> list[m.PlanRead]:
        return [plan async for plan in self.items(m.PagedListPlanRead, "/plans")]

    async def plan(self, name: str) -> m.PlanRead:
        result: m.PlanRead = await self.call(m.PlanRead, "GET", f"/plans/{_segment(name)}")
        return result

    async def update(self, resource: Any, mutate: Callable[[Any], Any]) -> Any:
        """Re-read ``resource``, apply ``mutate`` to it, write with If-Match; on 412 read
        and reapply again, up to 3 times. ``mutate`` returns the update body."""
        if isinstance(resource, m.ClusterRead):
            return await self.clusters.update(resource.name, mutate)
        if isinstance(resource, m.SecretRead):
            return await self.secrets.update(resource.name, mutate)
        raise TypeError(f"update() does not know {type(resource).__name__}")

    async def update_loop(
        self,
        read: Callable[[], Any],
        write: Callable[[Any, str | None], Any],
        mutate: Callable[[Any], Any],
    ) -> Any:
        attempt = 0
        while True:
            current, etag = await read()
            try:
                return await write(mutate(current), etag)
            except ApiError as error:
                attempt += 1
                if error.status != 412 or attempt > UPDATE_RETRIES:
                    raise


# Every operation of the API (its operationId) and the client method that performs it; a
# test holds this against docs/openapi.json.
OPERATIONS: dict[str, str] = {
    "listPlans": "plans",
    "getPlan": "plan",
    "listVersions": "versions",
    "getTenant": "get_tenant",
    "updateTenant": "update_tenant",
    "listClusters": "clusters.list",
    "createCluster": "clusters.create",
    "getCluster": "clusters.get",
    "updateCluster": "clusters.patch",
    "deleteCluster": "clusters.delete",
    "getConnectionDetails": "clusters.connection_details",
    "createClusterCredentials": "clusters.credentials",
    "listSecrets": "secrets.list",
    "createSecret": "secrets.create",
    "getSecret": "secrets.get",
    "updateSecret": "secrets.patch",
    "deleteSecret": "secrets.delete",
    "listMembers": "members.list",
    "addMember": "members.add",
    "getMember": "members.get",
    "updateMember": "members.update",
    "removeMember": "members.remove",
    "listApiKeys": "apikeys.list",
    "createApiKey": "apikeys.create",
    "getApiKey": "apikeys.get",
    "revokeApiKey": "apikeys.revoke",
    "listInvoices": "invoices.list",
    "getInvoice": "invoices.get",
    "getReceipt": "invoices.receipt",
    "createPortalSession": "billing.portal_session",
    "getAlertingConfig": "alerting.get_config",
    "putAlertingConfig": "alerting.put_config",
    "resetAlertingConfig": "alerting.reset_config",
    "getGlobal": "alerting.get_global",
    "putGlobal": "alerting.put_global",
    "getRootRoute": "alerting.get_root_route",
    "putRootRoute": "alerting.put_root_route",
    "listReceivers": "alerting.list_receivers",
    "getReceiver": "alerting.get_receiver",
    "putReceiver": "alerting.put_receiver",
    "deleteReceiver": "alerting.delete_receiver",
    "listRoutes": "alerting.list_routes",
    "getRoute": "alerting.get_route",
    "putRoute": "alerting.put_route",
    "deleteRoute": "alerting.delete_route",
    "listTemplates": "alerting.list_templates",
    "getTemplate": "alerting.get_template",
    "putTemplate": "alerting.put_template",
    "deleteTemplate": "alerting.delete_template",
    "listTimeIntervals": "alerting.list_time_intervals",
    "getTimeInterval": "alerting.get_time_interval",
    "putTimeInterval": "alerting.put_time_interval",
    "deleteTimeInterval": "alerting.delete_time_interval",
    "listEvents": "events.list",
    "listWebhooks": "webhooks.list",
    "createWebhook": "webhooks.create",
    "getWebhook": "webhooks.get",
    "updateWebhook": "webhooks.update",
    "deleteWebhook": "webhooks.delete",
    "rotateWebhookSecret": "webhooks.rotate_secret",
    "pingWebhook": "webhooks.ping",
    "listWebhookDeliveries": "webhooks.list_deliveries",
    "getWebhookDelivery": "webhooks.get_delivery",
    "redeliverWebhookDelivery": "webhooks.redeliver",
}
