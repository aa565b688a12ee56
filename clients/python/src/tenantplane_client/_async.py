"""The asynchronous client (``AsyncTenantplane``); ``_sync.py`` is generated from this file."""

from __future__ import annotations

import asyncio
import time as clock
import uuid
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, TypeAdapter

from tenantplane_client import models as m
from tenantplane_client import waiting
from tenantplane_client.errors import ApiError, ConnectionFailed, WaitTimeout
from tenantplane_client.limits import (
    DEFAULT_MAX_RESPONSE_BYTES,
    buffered,
    check_declared,
    check_received,
)
from tenantplane_client.retry import RetryPolicy, retry_safe

API_PREFIX = "/api/v1"
# How many times update() re-reads and reapplies a change refused with 412.
UPDATE_RETRIES = 3
DEFAULT_TIMEOUT = 30.0

T = TypeVar("T")
Body = BaseModel | Mapping[str, Any] | None
Progress = Callable[[m.ClusterRead], None]


def _segment(value: str) -> str:
    return quote(value, safe="")


def _body(body: Body) -> Any:
    if body is None:
        return None
    if isinstance(body, BaseModel):
        return body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(body)


def _etag(response: httpx.Response) -> str | None:
    etag: str | None = response.headers.get("ETag")
    return etag


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
    ) -> None:
        self.tenant = tenant
        self.max_response_bytes = max_response_bytes
        self.retry = retry or RetryPolicy()
        self.idempotency_keys = idempotency_keys
        self.http = httpx.AsyncClient(
            base_url=url.rstrip("/") + API_PREFIX,
            headers={"Authorization": f"Bearer {token}", "User-Agent": user_agent},
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
            if response.is_success:
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

    async def get_tenant(self) -> m.TenantRead:
        result: m.TenantRead = await self.call(m.TenantRead, "GET", self.tenant_path)
        return result

    async def update_tenant(self, body: m.TenantUpdate | Mapping[str, Any]) -> m.TenantRead:
        result: m.TenantRead = await self.call(m.TenantRead, "PATCH", self.tenant_path, body=body)
        return result

    async def versions(self) -> m.VersionList:
        result: m.VersionList = await self.call(m.VersionList, "GET", "/versions")
        return result

    async def plans(self) -> list[m.PlanRead]:
        result: m.ItemListPlanRead = await self.call(m.ItemListPlanRead, "GET", "/plans")
        return result.items

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


class _Api:
    def __init__(self, client: AsyncTenantplane) -> None:
        self.client = client

    @property
    def path(self) -> str:
        raise NotImplementedError

    def item(self, name: str) -> str:
        return f"{self.path}/{_segment(name)}"


class AsyncClusters(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/clusters"

    async def list(self) -> list[m.ClusterRead]:
        result: m.ItemListClusterRead = await self.client.call(
            m.ItemListClusterRead, "GET", self.path
        )
        return result.items

    async def get(self, name: str) -> m.ClusterRead:
        result: m.ClusterRead = await self.client.call(m.ClusterRead, "GET", self.item(name))
        return result

    async def create(self, body: m.ClusterCreate | Mapping[str, Any]) -> m.ClusterRead:
        result: m.ClusterRead = await self.client.call(m.ClusterRead, "POST", self.path, body=body)
        return result

    async def patch(
        self, name: str, body: m.ClusterUpdate | Mapping[str, Any], *, if_match: str | None = None
    ) -> m.ClusterRead:
        headers = {"If-Match": if_match} if if_match else None
        result: m.ClusterRead = await self.client.call(
            m.ClusterRead, "PATCH", self.item(name), body=body, headers=headers
        )
        return result

    async def read_with_etag(self, name: str) -> tuple[m.ClusterRead, str | None]:
        response = await self.client.request("GET", self.item(name))
        return m.ClusterRead.model_validate(response.json()), _etag(response)

    async def update(
        self, name: str, mutate: Callable[[m.ClusterRead], m.ClusterUpdate | Mapping[str, Any]]
    ) -> m.ClusterRead:
        async def read() -> tuple[m.ClusterRead, str | None]:
            return await self.read_with_etag(name)

        async def write(body: Any, etag: str | None) -> m.ClusterRead:
            return await self.patch(name, body, if_match=etag)

        result: m.ClusterRead = await self.client.update_loop(read, write, mutate)
        return result

    async def upgrade(
        self,
        name: str,
        version: str,
        *,
        wait: bool = False,
        timeout: float = 600.0,  # noqa: ASYNC109
        interval: float = 2.0,
        on_progress: Progress | None = None,
    ) -> m.ClusterRead:
        """Change the version (``update`` with If-Match). ``wait``: then ``wait_for`` the
        cluster to run it, Running with VersionUpToDate True (at once when it already did)."""
        effective = False

        def change(current: m.ClusterRead) -> m.ClusterUpdate:
            nonlocal effective
            effective = current.version != version
            return m.ClusterUpdate(version=version)

        cluster = await self.update(name, change)
        if not wait:
            return cluster
        return await self.wait_for(
            name,
            changed=cluster if effective else None,
            timeout=timeout,
            interval=interval,
            on_progress=on_progress,
        )

    async def delete(self, name: str, *, if_match: str | None = None) -> m.ClusterRead:
        headers = {"If-Match": if_match} if if_match else None
        result: m.ClusterRead = await self.client.call(
            m.ClusterRead, "DELETE", self.item(name), headers=headers
        )
        return result

    async def connection_details(self, name: str) -> m.ConnectionDetails:
        result: m.ConnectionDetails = await self.client.call(
            m.ConnectionDetails, "GET", f"{self.item(name)}/connection-details"
        )
        return result

    async def wait_for(
        self,
        name: str,
        phase: str = "Running",
        *,
        changed: m.ClusterRead | None = None,
        # The name users expect; the polling loop checks it itself between reads.
        timeout: float = 600.0,  # noqa: ASYNC109
        interval: float = 2.0,
        on_progress: Progress | None = None,
    ) -> m.ClusterRead:
        """Poll until the cluster is in ``phase`` (for Running: its VersionUpToDate condition
        True and, for HA, its replicas ready). ``changed``, the answer to an effective change
        of the spec: also until the reconciler has acted on it (``waiting.py``).
        ``on_progress`` gets the cluster each time its phase, observed generation, version
        condition or replica counts change."""
        deadline = clock.monotonic() + timeout
        generation = waiting.least_generation(changed)
        seen: tuple[Any, ...] | None = None
        while True:
            cluster = await self.get(name)
            state = waiting.progress_state(cluster)
            if state != seen:
                seen = state
                if on_progress is not None:
                    on_progress(cluster)
            if waiting.arrived(cluster, phase, generation):
                return cluster
            if clock.monotonic() >= deadline:
                raise WaitTimeout(
                    f"cluster {name} is {cluster.status.phase} (observed generation "
                    f"{cluster.status.observed_generation}), not {phase}"
                    + (f" at generation {generation} or later" if generation else "")
                    + f", after {timeout:g} s"
                )
            await asyncio.sleep(interval)


class AsyncSecrets(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/secrets"

    async def list(self) -> list[m.SecretRead]:
        result: m.ItemListSecretRead = await self.client.call(
            m.ItemListSecretRead, "GET", self.path
        )
        return result.items

    async def get(self, name: str) -> m.SecretRead:
        result: m.SecretRead = await self.client.call(m.SecretRead, "GET", self.item(name))
        return result

    async def create(self, body: m.SecretCreate | Mapping[str, Any]) -> m.SecretRead:
        result: m.SecretRead = await self.client.call(m.SecretRead, "POST", self.path, body=body)
        return result

    async def patch(
        self, name: str, body: m.SecretUpdate | Mapping[str, Any], *, if_match: str | None = None
    ) -> m.SecretRead:
        headers = {"If-Match": if_match} if if_match else None
        result: m.SecretRead = await self.client.call(
            m.SecretRead, "PATCH", self.item(name), body=body, headers=headers
        )
        return result

    async def update(
        self, name: str, mutate: Callable[[m.SecretRead], m.SecretUpdate | Mapping[str, Any]]
    ) -> m.SecretRead:
        async def read() -> tuple[m.SecretRead, str | None]:
            response = await self.client.request("GET", self.item(name))
            return m.SecretRead.model_validate(response.json()), _etag(response)

        async def write(body: Any, etag: str | None) -> m.SecretRead:
            return await self.patch(name, body, if_match=etag)

        result: m.SecretRead = await self.client.update_loop(read, write, mutate)
        return result

    async def delete(self, name: str) -> None:
        await self.client.request("DELETE", self.item(name))


class AsyncMembers(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/members"

    async def list(self) -> list[m.MemberRead]:
        result: m.ItemListMemberRead = await self.client.call(
            m.ItemListMemberRead, "GET", self.path
        )
        return result.items

    async def get(self, email: str) -> m.MemberRead:
        result: m.MemberRead = await self.client.call(m.MemberRead, "GET", self.item(email))
        return result

    async def add(self, email: str, role: m.Role) -> m.MemberRead:
        result: m.MemberRead = await self.client.call(
            m.MemberRead, "POST", self.path, body=m.MemberCreate(email=email, role=role)
        )
        return result

    async def update(self, email: str, role: m.Role) -> m.MemberRead:
        result: m.MemberRead = await self.client.call(
            m.MemberRead, "PATCH", self.item(email), body=m.MemberUpdate(role=role)
        )
        return result

    async def remove(self, email: str) -> None:
        await self.client.request("DELETE", self.item(email))


class AsyncApiKeys(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/apikeys"

    async def list(self) -> list[m.ApiKeyRead]:
        result: m.ItemListApiKeyRead = await self.client.call(
            m.ItemListApiKeyRead, "GET", self.path
        )
        return result.items

    async def get(self, key_id: str) -> m.ApiKeyRead:
        result: m.ApiKeyRead = await self.client.call(m.ApiKeyRead, "GET", self.item(key_id))
        return result

    async def create(self, body: m.ApiKeyCreate | Mapping[str, Any]) -> m.ApiKeyCreated:
        result: m.ApiKeyCreated = await self.client.call(
            m.ApiKeyCreated, "POST", self.path, body=body
        )
        return result

    async def revoke(self, key_id: str) -> None:
        await self.client.request("DELETE", self.item(key_id))


class AsyncInvoices(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/invoices"

    async def list(self) -> list[m.InvoiceRead]:
        result: m.ItemListInvoiceRead = await self.client.call(
            m.ItemListInvoiceRead, "GET", self.path
        )
        return result.items

    async def get(self, name: str) -> m.InvoiceRead:
        result: m.InvoiceRead = await self.client.call(m.InvoiceRead, "GET", self.item(name))
        return result

    async def receipt(self, name: str) -> m.ReceiptLink:
        result: m.ReceiptLink = await self.client.call(
            m.ReceiptLink, "GET", f"{self.item(name)}/receipt"
        )
        return result


class AsyncBilling(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/billing"

    async def portal_session(self) -> m.PortalSessionRead:
        result: m.PortalSessionRead = await self.client.call(
            m.PortalSessionRead, "POST", f"{self.path}/portal-session"
        )
        return result


class AsyncAlerting(_Api):
    """The alerting configuration: the wrapper, and each section on its own."""

    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/alerting"

    async def get_config(self) -> m.AlertingConfig:
        result: m.AlertingConfig = await self.client.call(
            m.AlertingConfig, "GET", f"{self.path}/config"
        )
        return result

    async def put_config(
        self, body: m.AlertingConfig | Mapping[str, Any], *, if_match: str | None = None
    ) -> m.AlertingConfig:
        headers = {"If-Match": if_match} if if_match else None
        result: m.AlertingConfig = await self.client.call(
            m.AlertingConfig, "PUT", f"{self.path}/config", body=body, headers=headers
        )
        return result

    async def reset_config(self) -> None:
        await self.client.request("DELETE", f"{self.path}/config")

    async def get_global(self) -> m.AlertingGlobalConfig:
        result: m.AlertingGlobalConfig = await self.client.call(
            m.AlertingGlobalConfig, "GET", f"{self.path}/global"
        )
        return result

    async def put_global(
        self, body: m.AlertingGlobalConfig | Mapping[str, Any]
    ) -> m.AlertingGlobalConfig:
        result: m.AlertingGlobalConfig = await self.client.call(
            m.AlertingGlobalConfig, "PUT", f"{self.path}/global", body=body
        )
        return result

    async def get_root_route(self) -> m.AlertingRoute:
        result: m.AlertingRoute = await self.client.call(
            m.AlertingRoute, "GET", f"{self.path}/route"
        )
        return result

    async def put_root_route(self, body: m.AlertingRoute | Mapping[str, Any]) -> m.AlertingRoute:
        result: m.AlertingRoute = await self.client.call(
            m.AlertingRoute, "PUT", f"{self.path}/route", body=body
        )
        return result

    async def list_receivers(self) -> list[m.AlertingReceiver]:
        result: m.AlertingReceiverList = await self.client.call(
            m.AlertingReceiverList, "GET", f"{self.path}/receivers"
        )
        return result.items

    async def get_receiver(self, name: str) -> m.AlertingReceiver:
        result: m.AlertingReceiver = await self.client.call(
            m.AlertingReceiver, "GET", f"{self.path}/receivers/{_segment(name)}"
        )
        return result

    async def put_receiver(
        self, name: str, body: m.AlertingReceiver | Mapping[str, Any]
    ) -> m.AlertingReceiver:
        result: m.AlertingReceiver = await self.client.call(
            m.AlertingReceiver, "PUT", f"{self.path}/receivers/{_segment(name)}", body=body
        )
        return result

    async def delete_receiver(self, name: str) -> None:
        await self.client.request("DELETE", f"{self.path}/receivers/{_segment(name)}")

    async def list_routes(self) -> list[m.AlertingRoute]:
        result: m.AlertingRouteList = await self.client.call(
            m.AlertingRouteList, "GET", f"{self.path}/routes"
        )
        return result.items

    async def get_route(self, index: int) -> m.AlertingRoute:
        result: m.AlertingRoute = await self.client.call(
            m.AlertingRoute, "GET", f"{self.path}/routes/{index}"
        )
        return result

    async def put_route(
        self, index: int, body: m.AlertingRoute | Mapping[str, Any]
    ) -> m.AlertingRoute:
        result: m.AlertingRoute = await self.client.call(
            m.AlertingRoute, "PUT", f"{self.path}/routes/{index}", body=body
        )
        return result

    async def delete_route(self, index: int) -> None:
        await self.client.request("DELETE", f"{self.path}/routes/{index}")

    async def list_templates(self) -> list[m.TemplateRead]:
        result: m.TemplateList = await self.client.call(
            m.TemplateList, "GET", f"{self.path}/templates"
        )
        return result.items

    async def get_template(self, filename: str) -> m.TemplateRead:
        result: m.TemplateRead = await self.client.call(
            m.TemplateRead, "GET", f"{self.path}/templates/{_segment(filename)}"
        )
        return result

    async def put_template(self, filename: str, contents: str) -> m.TemplateRead:
        result: m.TemplateRead = await self.client.call(
            m.TemplateRead,
            "PUT",
            f"{self.path}/templates/{_segment(filename)}",
            body=m.TemplateWrite(contents=contents),
        )
        return result

    async def delete_template(self, filename: str) -> None:
        await self.client.request("DELETE", f"{self.path}/templates/{_segment(filename)}")

    async def list_time_intervals(self) -> list[m.TimeIntervalRead]:
        result: m.TimeIntervalList = await self.client.call(
            m.TimeIntervalList, "GET", f"{self.path}/time-intervals"
        )
        return result.items

    async def get_time_interval(self, name: str) -> m.TimeIntervalRead:
        result: m.TimeIntervalRead = await self.client.call(
            m.TimeIntervalRead, "GET", f"{self.path}/time-intervals/{_segment(name)}"
        )
        return result

    async def put_time_interval(
        self, name: str, body: m.TimeIntervalWrite | Mapping[str, Any]
    ) -> m.TimeIntervalRead:
        result: m.TimeIntervalRead = await self.client.call(
            m.TimeIntervalRead, "PUT", f"{self.path}/time-intervals/{_segment(name)}", body=body
        )
        return result

    async def delete_time_interval(self, name: str) -> None:
        await self.client.request("DELETE", f"{self.path}/time-intervals/{_segment(name)}")


# Every operation of the API (its operationId) and the client method that performs it; a
# test holds this against docs/openapi.json.
OPERATIONS: dict[str, str] = {
    "listPlans": "plans",
    "listVersions": "versions",
    "getTenant": "get_tenant",
    "updateTenant": "update_tenant",
    "listClusters": "clusters.list",
    "createCluster": "clusters.create",
    "getCluster": "clusters.get",
    "updateCluster": "clusters.patch",
    "deleteCluster": "clusters.delete",
    "getConnectionDetails": "clusters.connection_details",
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
}
