"""The asynchronous members, API keys, invoices, billing and alerting groups;
``_sync_groups.py`` is generated from this file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from tenantplane_client import models as m
from tenantplane_client._async_clusters import _Api
from tenantplane_client._common import _segment


class AsyncMembers(_Api):
    @property
    def path(self) -> str:
        return f"{self.client.tenant_path}/members"

    def iter(self) -> AsyncIterator[m.MemberRead]:
        """Every one, a page at a time (the client's ``page_size``)."""
        return self.client.items(m.PagedListMemberRead, self.path)

    async def list(self) -> list[m.MemberRead]:
        return [item async for item in self.iter()]

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

    def iter(self) -> AsyncIterator[m.ApiKeyRead]:
        """Every one, a page at a time (the client's ``page_size``)."""
        return self.client.items(m.PagedListApiKeyRead, self.path)

    async def list(self) -> list[m.ApiKeyRead]:
        return [item async for item in self.iter()]

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
        return [
            item
            async for item in self.client.items(m.AlertingReceiverList, f"{self.path}/receivers")
        ]

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
        return [
            item async for item in self.client.items(m.AlertingRouteList, f"{self.path}/routes")
        ]

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
        return [item async for item in self.client.items(m.TemplateList, f"{self.path}/templates")]

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
        return [
            item
            async for item in self.client.items(m.TimeIntervalList, f"{self.path}/time-intervals")
        ]

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
