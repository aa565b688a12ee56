"""The asynchronous clusters and secrets groups; ``_sync_clusters.py`` is generated from
this file."""

from __future__ import annotations

import asyncio
import time as clock
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from tenantplane_client import models as m
from tenantplane_client import waiting
from tenantplane_client._common import Progress, _etag, _segment
from tenantplane_client.errors import WaitTimeout

if TYPE_CHECKING:
    from tenantplane_client._async import AsyncTenantplane


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

    def iter(self) -> AsyncIterator[m.ClusterRead]:
        """Every cluster, a page at a time (the client's ``page_size``)."""
        return self.client.items(m.PagedListClusterRead, self.path)

    async def list(self) -> list[m.ClusterRead]:
        return [item async for item in self.iter()]

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

    async def credentials(self, name: str) -> m.ClusterCredentials:
        """A short-lived token for the cluster's API server, bound to this caller."""
        result: m.ClusterCredentials = await self.client.call(
            m.ClusterCredentials, "POST", f"{self.item(name)}/credentials"
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

    def iter(self) -> AsyncIterator[m.SecretRead]:
        """Every secret, a page at a time (the client's ``page_size``)."""
        return self.client.items(m.PagedListSecretRead, self.path)

    async def list(self) -> list[m.SecretRead]:
        return [item async for item in self.iter()]

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
